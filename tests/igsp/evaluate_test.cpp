// Scoring a trained ByteLm per dimension: the evaluation set comes back from
// the checkpoint's manifest (and refuses changed corpus files), the four
// scores are in range, and retention is 100 for the model against itself.

#include "real/igsp/evaluate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "real/igsp/train.h"
#include "tests/igsp/tiny_training.h"

namespace clustertwin::real::igsp {
namespace {

TEST(EvaluateTest, ScoresATrainedCheckpointPerDimension) {
  const std::filesystem::path dir = testing::tiny_corpus_root("ct_eval_root", 12);
  TrainOptions o = testing::tiny_train_options(dir.string(), ::testing::TempDir() + "ct_eval.pt");
  o.model.context = 24;
  o.max_steps = 30;
  auto trained = train_byte_lm(o, nullptr);
  ASSERT_TRUE(trained.is_ok()) << trained.status().message();
  auto c = models::nets::load_byte_lm(o.out);
  ASSERT_TRUE(c.is_ok());
  auto set = eval_set_for(c->meta_json, o.out, 20);
  ASSERT_TRUE(set.is_ok()) << set.status().message();
  EXPECT_FALSE(set->general_heldout.empty());  // every 10th file: one of 12
  EXPECT_EQ(set->arithmetic.size(), 20u);
  EXPECT_EQ(set->facts.size(), 20u);
  const auto scores = evaluate(c->model, *set, 8);
  ASSERT_EQ(scores.size(), 4u);
  EXPECT_EQ(scores[0].metric, "perplexity");
  EXPECT_GT(scores[0].value, 1);
  EXPECT_LT(scores[0].value, 256);  // trained a little: better than uniform
  EXPECT_GE(scores[2].value, 0);
  EXPECT_LE(scores[2].value, 1);
  EXPECT_EQ(scores[3].items, 20);
  const auto same = retention(scores, scores);
  ASSERT_EQ(same.size(), 5u);
  for (size_t i = 0; i < 4; ++i) {
    if (scores[i].value > 0) {
      EXPECT_DOUBLE_EQ(same[i], 100) << i;
    }
  }

  // A corpus file changed since training: refused, naming it.
  std::ofstream(dir / "doc" / "p10" / "README") << "something else entirely\n";
  auto changed = eval_set_for(c->meta_json, o.out, 5);
  ASSERT_FALSE(changed.is_ok());
  EXPECT_NE(changed.status().message().find((dir / "doc" / "p10" / "README").string()), std::string::npos)
      << changed.status().message();
  EXPECT_FALSE(eval_set_for("{}", o.out, 5).is_ok());
}

TEST(EvaluateTest, RetentionTurnsPerplexityAround) {
  using clustertwin::models::igsp::Domain;
  const std::vector<DimensionScore> dense = {{Domain::kGeneral, "perplexity", 4, 1},
                                             {Domain::kCode, "perplexity", 2, 1},
                                             {Domain::kMath, "accuracy", 0.5, 1},
                                             {Domain::kCommonsense, "accuracy", 0.8, 1}};
  const std::vector<DimensionScore> pruned = {{Domain::kGeneral, "perplexity", 5, 1},
                                              {Domain::kCode, "perplexity", 4, 1},
                                              {Domain::kMath, "accuracy", 0.25, 1},
                                              {Domain::kCommonsense, "accuracy", 0.8, 1}};
  const auto r = retention(pruned, dense);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_DOUBLE_EQ(r[0], 80);
  EXPECT_DOUBLE_EQ(r[1], 50);
  EXPECT_DOUBLE_EQ(r[2], 50);
  EXPECT_DOUBLE_EQ(r[3], 100);
  EXPECT_DOUBLE_EQ(r[4], 70);
}

// One text at a time, as evaluation ran before it was batched.
at::Tensor bytes_alone(const std::string& text) {
  at::Tensor out = at::empty({1, static_cast<int64_t>(text.size())}, at::kLong);
  for (size_t i = 0; i < text.size(); ++i)
    out[0][static_cast<int64_t>(i)] = static_cast<unsigned char>(text[i]);
  return out;
}

std::string greedy_alone(models::nets::ByteLm& model, std::string text, int max_bytes) {
  std::string out;
  const size_t context = static_cast<size_t>(model->options().context);
  for (int i = 0; i < max_bytes; ++i) {
    const std::string window = text.size() > context ? text.substr(text.size() - context) : text;
    const at::Tensor logits = model->forward(bytes_alone(window));
    const int next = static_cast<int>(logits[0][logits.size(1) - 1].argmax().item<int64_t>());
    if (next == '\n') break;
    out.push_back(static_cast<char>(next));
    text.push_back(static_cast<char>(next));
  }
  return out;
}

double option_alone(models::nets::ByteLm& model, const std::string& question, const std::string& option) {
  std::string text = question + option;
  const size_t context = static_cast<size_t>(model->options().context);
  text = text.substr(text.size() > context ? text.size() - context : 0);
  const int64_t option_start = static_cast<int64_t>(text.size() - option.size());
  const at::Tensor bytes = bytes_alone(text);
  const at::Tensor logp = at::log_softmax(model->forward(bytes.slice(1, 0, bytes.size(1) - 1)), -1);
  double sum = 0;
  for (int64_t t = std::max<int64_t>(option_start, 1); t < bytes.size(1); ++t)
    sum += logp[0][t - 1][bytes[0][t].item<int64_t>()].item<double>();
  return sum / static_cast<double>(option.size());
}

// Batched evaluation gives each item what it gets alone: the texts of one
// length go together unpadded, so rows never mix, but a larger GEMM can take
// another of OpenBLAS's kernels and round differently, so the option scores
// agree to float rounding (1e-6 relative) and the choices they make exactly;
// the greedy answers (argmaxes) are the same bytes. A context of 24 bytes makes
// the longer questions slide, and an untrained model's answers run to the
// 6-byte limit or stop early at a newline.
TEST(EvaluateTest, BatchedScoresEqualScoringEachItemAlone) {
  models::nets::ByteLmOptions options;
  options.context = 24;
  options.layers = 2;
  auto model = models::nets::make_byte_lm(options, 3);
  ASSERT_TRUE(model.is_ok());
  at::NoGradGuard no_grad;
  (*model)->eval();
  const auto arithmetic = clustertwin::models::igsp::arithmetic_items(5, 60);
  std::vector<std::string> prompts;
  for (const auto& item : arithmetic)
    prompts.push_back(item.prompt);
  const std::vector<std::string> answers = greedy_continuations(*model, prompts, 6);
  ASSERT_EQ(answers.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(answers[i], greedy_alone(*model, prompts[i], 6)) << prompts[i];
  const auto facts = clustertwin::models::igsp::commonsense_items(5, 40);
  const std::vector<std::vector<double>> scores = option_scores(*model, facts);
  ASSERT_EQ(scores.size(), facts.size());
  for (size_t i = 0; i < facts.size(); ++i) {
    ASSERT_EQ(scores[i].size(), facts[i].options.size());
    std::vector<double> alone;
    for (const std::string& option : facts[i].options) {
      alone.push_back(option_alone(*model, facts[i].question, option));
      EXPECT_NEAR(scores[i][alone.size() - 1], alone.back(), 1e-6 * std::abs(alone.back())) << facts[i].question;
    }
    EXPECT_EQ(std::max_element(scores[i].begin(), scores[i].end()) - scores[i].begin(),
              std::max_element(alone.begin(), alone.end()) - alone.begin())
        << facts[i].question;
  }
}

// Equal texts go through the model once: a list with every prompt and item
// twice over gets, for each copy, the very bits the list without copies gets
// (the same distinct texts make the same batches), and the held-out sets do
// repeat themselves (what makes this worth doing).
TEST(EvaluateTest, RepeatedPromptsAndOptionsAreScoredOnce) {
  models::nets::ByteLmOptions options;
  options.context = 24;
  options.layers = 2;
  auto model = models::nets::make_byte_lm(options, 5);
  ASSERT_TRUE(model.is_ok());
  (*model)->eval();
  const auto arithmetic = clustertwin::models::igsp::arithmetic_items(5, 300);
  std::vector<std::string> prompts, distinct;
  for (const auto& item : arithmetic) {
    prompts.push_back(item.prompt);
    if (std::find(distinct.begin(), distinct.end(), item.prompt) == distinct.end()) distinct.push_back(item.prompt);
  }
  EXPECT_LT(distinct.size(), prompts.size());  // 300 draws from about 1,600 held-out prompts repeat some
  const std::vector<std::string> once = greedy_continuations(*model, distinct, 6);
  std::vector<std::string> twice_prompts = prompts;
  twice_prompts.insert(twice_prompts.end(), prompts.begin(), prompts.end());
  const std::vector<std::string> twice = greedy_continuations(*model, twice_prompts, 6);
  ASSERT_EQ(twice.size(), twice_prompts.size());
  for (size_t i = 0; i < twice.size(); ++i) {
    const size_t d =
        static_cast<size_t>(std::find(distinct.begin(), distinct.end(), twice_prompts[i]) - distinct.begin());
    EXPECT_EQ(twice[i], once[d]) << twice_prompts[i];
  }

  const auto facts = clustertwin::models::igsp::commonsense_items(5, 100);
  std::vector<clustertwin::models::igsp::ChoiceItem> doubled = facts;
  doubled.insert(doubled.end(), facts.begin(), facts.end());
  const auto single = option_scores(*model, facts);
  const auto repeated = option_scores(*model, doubled);
  ASSERT_EQ(repeated.size(), 2 * facts.size());
  for (size_t i = 0; i < repeated.size(); ++i)
    EXPECT_EQ(repeated[i], single[i % facts.size()]) << doubled[i].question;  // exact: the same bits
}

}  // namespace
}  // namespace clustertwin::real::igsp
