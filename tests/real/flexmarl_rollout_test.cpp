// FlexMARL's rollout engine: batched sampling with a KV cache gives each
// request the response it gets alone, with the behaviour policy's
// log-probabilities equal to a full forward's; budgets and the end token
// stop it; bad requests are one line each.

#include <gtest/gtest.h>

#include "models/flexmarl/math_task.h"
#include "real/flexmarl/grpo_trainer.h"
#include "real/flexmarl/rollout.h"
#include "real/flexmarl/worker.h"

namespace clustertwin::real::flexmarl {
namespace {

namespace cf = clustertwin::models::flexmarl;

ByteLm planner() {
  auto m = make_task_model(cf::small_task(), 0, 3);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return *m;
}

RolloutOptions options() {
  RolloutOptions o;
  o.topk = 4;
  o.end_token = cf::kEnd;
  o.seed = 11;
  return o;
}

std::vector<RolloutRequest> requests() {
  std::vector<RolloutRequest> out;
  for (int i = 0; i < 6; ++i) {
    RolloutRequest r;
    r.key = 1000 + static_cast<uint64_t>(i);
    r.prompt = cf::make_problem(5, i).tokens();
    if (i % 3 == 2) r.prompt.push_back(cf::kSep);  // two prompt lengths: two batches
    r.budget = 3 + 4 * i;
    r.stops_at_end = i % 2 == 0;
    out.push_back(r);
  }
  return out;
}

TEST(FlexMarlRolloutTest, BatchedEqualsAloneAndLogProbabilitiesEqualAFullForward) {
  ByteLm model = planner();
  const std::vector<RolloutRequest> reqs = requests();
  auto batched = generate(model, reqs, options());
  ASSERT_TRUE(batched.is_ok()) << batched.status().message();
  ASSERT_EQ(batched->size(), reqs.size());
  bool any_stopped_early = false;
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto alone = generate(model, {reqs[i]}, options());
    ASSERT_TRUE(alone.is_ok());
    const RolloutResult& b = (*batched)[i];
    EXPECT_EQ(b.response, (*alone)[0].response) << "request " << i;
    EXPECT_LE(b.logp.sub((*alone)[0].logp).abs().max().item<double>(), 1e-12);
    // Budget and end token.
    ASSERT_GE(b.response.size(), 1u);
    EXPECT_LE(static_cast<int>(b.response.size()), reqs[i].budget);
    if (reqs[i].stops_at_end) {
      for (size_t t = 0; t + 1 < b.response.size(); ++t)
        EXPECT_NE(b.response[t], cf::kEnd);
      if (static_cast<int>(b.response.size()) < reqs[i].budget) {
        EXPECT_EQ(b.response.back(), cf::kEnd);
        any_stopped_early = true;
      }
    } else {
      EXPECT_EQ(static_cast<int>(b.response.size()), reqs[i].budget) << "no early stop";
    }
    // The log-probabilities are the model's on the whole sequence.
    std::vector<int64_t> seq = reqs[i].prompt;
    seq.insert(seq.end(), b.response.begin(), b.response.end());
    const at::Tensor tokens = at::tensor(seq, at::kLong).unsqueeze(0);
    at::NoGradGuard no_grad;
    const at::Tensor full = next_token_logp(model, tokens).squeeze(0);
    ASSERT_EQ(b.logp.size(0), full.size(0));
    EXPECT_LE(b.logp.sub(full).abs().max().item<double>(), 1e-10) << "request " << i;
    ASSERT_EQ(b.topk_ids.sizes(), (at::IntArrayRef{full.size(0), 4}));
    const at::Tensor all = at::log_softmax(model->forward(tokens.slice(1, 0, tokens.size(1) - 1)), -1).squeeze(0);
    EXPECT_LE(all.gather(-1, b.topk_ids).sub(b.topk_logp).abs().max().item<double>(), 1e-10);
    EXPECT_LE(std::get<0>(all.max(-1)).sub(b.topk_logp.select(1, 0)).abs().max().item<double>(), 1e-10)
        << "the first of the top-K is the most likely";
  }
  EXPECT_TRUE(any_stopped_early) << "some response ends with the end token (at this seed)";
}

TEST(FlexMarlRolloutTest, TheKeyAndTheSeedDecideTheResponse) {
  ByteLm model = planner();
  RolloutRequest r = requests()[1];
  r.budget = 40;
  auto a = generate(model, {r}, options());
  r.key += 1;
  auto b = generate(model, {r}, options());
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE((*a)[0].response, (*b)[0].response);
}

TEST(FlexMarlRolloutTest, BadRequestsAreOneLine) {
  ByteLm model = planner();
  RolloutRequest r = requests()[0];
  r.prompt.clear();
  EXPECT_EQ(generate(model, {r}, options()).status().message(), "rollout request 0 (key 1000): empty prompt");
  r = requests()[0];
  r.prompt[1] = 16;
  EXPECT_EQ(generate(model, {r}, options()).status().message(),
            "rollout request 0 (key 1000): token 16 outside the vocabulary of 16");
  r = requests()[0];
  r.budget = 0;
  EXPECT_EQ(generate(model, {r}, options()).status().message(), "rollout request 0 (key 1000): budget 0 < 1");
  r.budget = 92;
  EXPECT_EQ(generate(model, {r}, options()).status().message(),
            "rollout request 0 (key 1000): prompt of 6 + budget 92 exceeds the context 96 + 1");
  RolloutOptions o = options();
  o.topk = 17;
  EXPECT_EQ(generate(model, {requests()[0]}, o).status().message(), "rollout: top-K 17 must be in [1, vocab 16]");
}

}  // namespace
}  // namespace clustertwin::real::flexmarl
