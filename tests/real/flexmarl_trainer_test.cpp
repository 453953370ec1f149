// FlexMARL's trainer: the micro-batch pipeline gives the synchronous
// full-batch update, on one rank and on four (ranks as threads, Gloo), and an
// agent's state survives a swap to another rank.

#include <gtest/gtest.h>

#include <random>

#include "real/flexmarl/grpo_trainer.h"
#include "real/flexmarl/worker.h"
#include "tests/real/rank_threads.h"

namespace clustertwin::real::flexmarl {
namespace {

constexpr int kBatch = 16, kGroup = 4, kMicro = 2;

ByteLmOptions tiny() {
  ByteLmOptions o;
  o.context = 32;
  o.d_model = 32;
  o.layers = 2;
  o.heads = 2;
  o.d_ff = 64;
  return o;
}

ByteLm model(uint64_t seed) {
  auto m = make_byte_lm(tiny(), seed);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  (*m)->to(at::kDouble);  // the equality is checked at 1e-6: keep float rounding out of it
  return *m;
}

// A global batch: random prompts and responses, behaviour log-probabilities from the initial policy plus
// noise (off-policy enough that the clip engages), rewards in groups, advantages fixed up front.
std::vector<TrainSample> make_batch(uint64_t seed) {
  std::mt19937_64 rng(seed);
  ByteLm behaviour = model(1);
  std::vector<TrainSample> batch;
  std::vector<double> rewards;
  for (int i = 0; i < kBatch; ++i) {
    const int64_t prompt = 3 + static_cast<int64_t>(rng() % 5);
    const int64_t length = prompt + 4 + static_cast<int64_t>(rng() % 20);
    TrainSample s;
    s.tokens = at::empty({length}, at::kLong);
    for (int64_t t = 0; t < length; ++t)
      s.tokens[t] = static_cast<int64_t>(rng() % 256);
    s.prompt_tokens = prompt;
    {
      at::NoGradGuard no_grad;
      at::Tensor noise = at::empty({length - 1}, at::kDouble);
      std::normal_distribution<double> n(0, 0.3);
      for (int64_t t = 0; t < length - 1; ++t)
        noise[t] = n(rng);
      s.logp_old = next_token_logp(behaviour, s.tokens.unsqueeze(0)).squeeze(0) + noise;
      // The engine's top-8 at each position (for SIS's envelope).
      const at::Tensor all = at::log_softmax(behaviour->forward(s.tokens.slice(0, 0, length - 1).unsqueeze(0)), -1);
      auto [values, ids] = all.squeeze(0).topk(8, -1);
      s.topk_ids = ids;
      s.topk_logp_old = values;
    }
    s.id = 1000 + static_cast<uint64_t>(i);
    batch.push_back(s);
    rewards.push_back(static_cast<double>(rng() % 3));
  }
  auto adv = group_advantages(rewards, kGroup);
  EXPECT_TRUE(adv.is_ok());
  for (int i = 0; i < kBatch; ++i)
    batch[i].advantage = (*adv)[i];
  return batch;
}

sis::LossOptions loss_of(sis::LossKind kind, bool sis) {
  sis::LossOptions o;
  o.kind = kind;
  o.sis = sis;
  o.seed = 5;
  return o;
}

at::Tensor flat_params(ByteLm& m) {
  std::vector<at::Tensor> ps;
  for (const at::Tensor& p : m->parameters())
    ps.push_back(p.detach().reshape(-1));
  return at::cat(ps);
}

double relative(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

// The synchronous update: the whole batch as one micro-batch, one step.
at::Tensor full_batch_update(const std::vector<TrainSample>& batch, const sis::LossOptions& loss) {
  AgentTrainer t(model(7), AdamOptions{}, loss);
  EXPECT_TRUE(t.accumulate(batch, batch_totals(batch)).is_ok());
  EXPECT_TRUE(t.step(nullptr, nullptr).is_ok());
  return flat_params(t.model());
}

std::vector<TrainSample> micro_batch(const std::vector<TrainSample>& batch, int index) {
  return {batch.begin() + index * kMicro, batch.begin() + (index + 1) * kMicro};
}

class MicroBatchPipelineTest : public ::testing::TestWithParam<std::pair<sis::LossKind, bool>> {};

// The process twin prices jobs, and the run reports its policies, by the
// torch-free parameter counts of models/flexmarl/math_task.h: they must be
// the agents' real models', at every size.
TEST(TaskModelTest, TorchFreeParameterCountsMatchTheModels) {
  for (const std::string size : {"small", "large"}) {
    auto task = clustertwin::models::flexmarl::task_spec(size);
    ASSERT_TRUE(task.is_ok()) << task.status().message();
    for (int agent = 0; agent < clustertwin::models::flexmarl::kTaskTurns; ++agent) {
      auto model = make_task_model(*task, agent, 0);
      ASSERT_TRUE(model.is_ok());
      int64_t all = 0;
      for (const at::Tensor& p : (*model)->parameters())
        all += p.numel();
      const ByteLmOptions o = task_model_options(*task, agent);
      EXPECT_EQ(clustertwin::models::flexmarl::task_params(*task, agent), all) << size << " " << agent;
      EXPECT_EQ(clustertwin::models::flexmarl::task_linear_params(*task, agent),
                all - (o.vocab + o.context) * o.d_model)
          << size << " " << agent;
    }
  }
}

TEST_P(MicroBatchPipelineTest, OneRankEqualsTheFullBatch) {
  const auto [kind, sis] = GetParam();
  const std::vector<TrainSample> batch = make_batch(3);
  const at::Tensor reference = full_batch_update(batch, loss_of(kind, sis));
  AgentTrainer t(model(7), AdamOptions{}, loss_of(kind, sis));
  const BatchTotals totals = batch_totals(batch);
  // Micro-batches in a scrambled order, as they become ready.
  for (int m : {5, 0, 7, 2, 1, 6, 3, 4})
    ASSERT_TRUE(t.accumulate(micro_batch(batch, m), totals).is_ok());
  ASSERT_TRUE(t.step(nullptr, nullptr).is_ok());
  ByteLm fresh = model(7);
  const at::Tensor start = flat_params(fresh);
  EXPECT_GT(relative(reference, start), 1e-4);  // the step moved the parameters
  EXPECT_LE(relative(flat_params(t.model()), reference), 1e-6);
  EXPECT_EQ(t.version(), 1);
}

INSTANTIATE_TEST_SUITE_P(Losses, MicroBatchPipelineTest,
                         ::testing::Values(std::make_pair(sis::LossKind::kPpo, false),
                                           std::make_pair(sis::LossKind::kDapo, false),
                                           std::make_pair(sis::LossKind::kGspo, false),
                                           std::make_pair(sis::LossKind::kPpo, true)));

TEST(MicroBatchPipelineTest, FourRanksEqualTheFullBatch) {
  const std::vector<TrainSample> batch = make_batch(11);
  const sis::LossOptions loss = loss_of(sis::LossKind::kDapo, false);
  const at::Tensor reference = full_batch_update(batch, loss);
  std::vector<double> errors(4, 1.0);
  auto results = testing::run_ranks(4, [&](Communicator& c) -> Status {
    auto world = c.world(0);
    if (!world.is_ok()) return world.status();
    AgentTrainer t(model(7), AdamOptions{}, loss);
    const BatchTotals totals = batch_totals(batch);
    // Rank r trains micro-batches r and r + 4 (of 8), then the ranks sum their gradients and step.
    for (int m : {c.rank(), c.rank() + 4}) {
      auto l = t.accumulate(micro_batch(batch, m), totals);
      if (!l.is_ok()) return l.status();
    }
    CT_RETURN_IF_ERROR(t.step(&c, *world));
    errors[c.rank()] = relative(flat_params(t.model()), reference);
    return Status::ok();
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].message();
    EXPECT_LE(errors[r], 1e-6) << "rank " << r;
  }
}

TEST(StateSwapTest, HalfTrainedStateMovesToAnotherRankAndFinishes) {
  // Rank 0 trains half the micro-batches and the first step's state, then swaps the agent out to rank 1,
  // which holds another agent's model until the state arrives; rank 1 finishes the batch.
  const std::vector<TrainSample> batch = make_batch(13);
  const sis::LossOptions loss = loss_of(sis::LossKind::kPpo, false);
  AgentTrainer reference(model(7), AdamOptions{}, loss);
  const BatchTotals totals = batch_totals(batch);
  for (int m = 0; m < 8; ++m)
    ASSERT_TRUE(reference.accumulate(micro_batch(batch, m), totals).is_ok());
  ASSERT_TRUE(reference.step(nullptr, nullptr).is_ok());
  for (int m = 0; m < 8; ++m)
    ASSERT_TRUE(reference.accumulate(micro_batch(batch, m), totals).is_ok());
  ASSERT_TRUE(reference.step(nullptr, nullptr).is_ok());
  const at::Tensor expected = flat_params(reference.model());

  double error = 1;
  auto results = testing::run_ranks(2, [&](Communicator& c) -> Status {
    auto world = c.world(0);
    if (!world.is_ok()) return world.status();
    AgentTrainer t(model(c.rank() == 0 ? 7 : 99), AdamOptions{}, loss);
    at::Tensor state = at::empty({t.state_numel()}, at::kDouble);
    if (c.rank() == 0) {
      for (int m = 0; m < 8; ++m)
        CT_RETURN_IF_ERROR(t.accumulate(micro_batch(batch, m), totals).status());
      CT_RETURN_IF_ERROR(t.step(nullptr, nullptr));
      for (int m = 0; m < 4; ++m)
        CT_RETURN_IF_ERROR(t.accumulate(micro_batch(batch, m), totals).status());
      state = t.pack_state();
      return c.send(**world, state, 1, 0);
    }
    CT_RETURN_IF_ERROR(c.recv(**world, state, 0, 0));
    CT_RETURN_IF_ERROR(t.unpack_state(state));
    for (int m = 4; m < 8; ++m)
      CT_RETURN_IF_ERROR(t.accumulate(micro_batch(batch, m), totals).status());
    CT_RETURN_IF_ERROR(t.step(nullptr, nullptr));
    error = relative(flat_params(t.model()), expected);
    return Status::ok();
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].message();
  EXPECT_LE(error, 1e-12);
}

TEST(TrainerInputTest, BadSamplesAndStatesAreOneLine) {
  AgentTrainer t(model(7), AdamOptions{}, loss_of(sis::LossKind::kPpo, false));
  TrainSample s;
  s.tokens = at::arange(10, at::kLong);
  s.prompt_tokens = 0;
  s.logp_old = at::zeros({9}, at::kDouble);
  const BatchTotals totals{1, 9};
  EXPECT_EQ(t.accumulate({s}, totals).status().message(),
            "micro-batch sample 0: prompt of 0 tokens in 10 (needs 1 <= prompt < tokens)");
  s.prompt_tokens = 2;
  s.logp_old = at::zeros({10}, at::kDouble);
  EXPECT_EQ(t.accumulate({s}, totals).status().message(), "micro-batch sample 0: logp_old must be [9]");
  s.tokens = at::arange(40, at::kLong);
  EXPECT_EQ(t.accumulate({s}, totals).status().message(),
            "micro-batch sample 0: 40 tokens exceed the model's context 32 + 1");
  EXPECT_EQ(t.unpack_state(at::zeros({3}, at::kDouble)).message(),
            "agent state: 3 elements, the trainer's layout has " + std::to_string(t.state_numel()));
  EXPECT_EQ(group_advantages({1, 2, 3}, 2).status().message(), "group advantages: group 2 does not divide 3 rewards");
  auto adv = group_advantages({1, 3, 5, 5}, 2);
  ASSERT_TRUE(adv.is_ok());
  EXPECT_NEAR((*adv)[0], -1.0, 1e-5);  // (1 - 2) / 1
  EXPECT_NEAR((*adv)[1], 1.0, 1e-5);
  EXPECT_EQ((*adv)[2], 0.0);  // a group with one reward: no signal
}

}  // namespace
}  // namespace clustertwin::real::flexmarl
