// Scoring a trained ByteLm per dimension: the evaluation set comes back from
// the checkpoint's manifest (and refuses changed corpus files), the four
// scores are in range, and retention is 100 for the model against itself.

#include "real/igsp/evaluate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
  auto c = torch_models::load_byte_lm(o.out);
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
  using clustertwin::igsp::Domain;
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

}  // namespace
}  // namespace clustertwin::real::igsp
