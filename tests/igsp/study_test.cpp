// The IGSP study's runs on a tiny trained model: every set and seed once, in
// order; the numbers do not depend on how many workers ran them; a bad set
// name fails before any run.

#include "real/igsp/study.h"

#include <gtest/gtest.h>

#include "tests/igsp/tiny_training.h"

namespace clustertwin::real::igsp {
namespace {

std::string trained_checkpoint() {
  TrainOptions o = testing::tiny_train_options(testing::tiny_corpus_root("ct_igsp_study_root", 3),
                                               ::testing::TempDir() + "ct_igsp_study.pt");
  auto r = train_byte_lm(o, nullptr);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return o.out;
}

StudyOptions small(const std::string& checkpoint, int jobs) {
  StudyOptions o;
  o.checkpoint = checkpoint;
  o.sets = {"math", "general+code", "random", "igsp-unique"};
  o.seeds = 2;
  o.first_seed = 5;
  o.prune.layer.sparsity = 0.5;
  o.calibration.samples = 8;
  o.calibration.igsp_pool_factor = 2;
  o.calibration.igsp_strata = 2;
  o.eval_items = 6;
  o.eval_windows = 4;
  o.jobs = jobs;
  o.require_dense_scores = false;  // a 20-step model does no arithmetic
  return o;
}

TEST(IgspStudyTest, EveryRunOnceInOrderAndTheSameWithOneOrTwoWorkers) {
  const std::string checkpoint = trained_checkpoint();
  int calls = 0;
  auto one = run_study(small(checkpoint, 1), [&](const StudyRun&, int done, int total) {
    ++calls;
    EXPECT_EQ(total, 8);
    EXPECT_EQ(done, calls);
  });
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  EXPECT_EQ(calls, 8);
  auto two = run_study(small(checkpoint, 2), nullptr);
  ASSERT_TRUE(two.is_ok()) << two.status().message();
  ASSERT_EQ(one->runs.size(), 8u);
  ASSERT_EQ(one->dense.size(), 4u);
  const std::vector<std::string> kinds = {"source", "source", "control", "self-generated"};
  for (size_t i = 0; i < one->runs.size(); ++i) {
    const StudyRun &a = one->runs[i], &b = two->runs[i];
    EXPECT_EQ(a.set, small(checkpoint, 1).sets[i / 2]);
    EXPECT_EQ(a.seed, 5 + i % 2);
    EXPECT_EQ(a.kind, kinds[i / 2]);
    ASSERT_EQ(a.retention.size(), 5u);
    EXPECT_EQ(a.retention, b.retention) << a.set << " seed " << a.seed;
    EXPECT_EQ(a.dense_perplexity, b.dense_perplexity);
    EXPECT_EQ(a.information.volume, 8 * 16);  // equal token budgets: samples x the context
    EXPECT_GT(a.dense_perplexity, 1.0);
  }
  // Seeds draw different calibration sets.
  EXPECT_NE(one->runs[0].dense_perplexity, one->runs[1].dense_perplexity);
  // Random bytes look nothing like the training text.
  EXPECT_GT(one->runs[4].dense_perplexity, 2 * one->runs[0].dense_perplexity);
}

TEST(IgspStudyTest, BadOptionsFailBeforeAnyRun) {
  const std::string checkpoint = trained_checkpoint();
  int calls = 0;
  auto count = [&](const StudyRun&, int, int) { ++calls; };
  StudyOptions o = small(checkpoint, 1);
  o.sets = {"math", "poetry"};
  auto r = run_study(o, count);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("calib 'poetry': unknown calibration source"), std::string::npos)
      << r.status().message();
  o = small(checkpoint, 1);
  o.seeds = 0;
  EXPECT_EQ(run_study(o, count).status().message(), "seeds 0: must be >= 1");
  o = small(checkpoint, 1);
  o.prune.layer.sparsity = 1;
  EXPECT_EQ(run_study(o, count).status().message(), "sparsity 1.000000: must be in [0, 1)");
  o = small(checkpoint, 1);
  o.require_dense_scores = true;
  r = run_study(o, count);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(": nothing held out to score general on: retention is undefined"),
            std::string::npos)
      << r.status().message();
  o = small(checkpoint, 1);
  o.checkpoint = checkpoint + ".missing";
  EXPECT_FALSE(run_study(o, count).is_ok());
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace clustertwin::real::igsp
