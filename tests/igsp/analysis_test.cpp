// The study's analysis: t quantiles against printed tables, seed summaries,
// and the rho table's undefined cells and Holm family.

#include "models/igsp/analysis.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/statistics.h"

namespace clustertwin::models::igsp {
namespace {

TEST(AnalysisTest, StudentQuantilesMatchTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.30265, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.77645, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.04227, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.95, 10), 1.81246, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.025, 2), -4.30265, 1e-4);
  EXPECT_DOUBLE_EQ(student_t_quantile(0.5, 3), 0.0);
}

TEST(AnalysisTest, SummaryOfSeeds) {
  const SeedSummary s = summarise({1, 2, 3});
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.mean, 2);
  EXPECT_DOUBLE_EQ(s.sd, 1);
  EXPECT_NEAR(s.high - s.mean, 4.30265 / std::sqrt(3.0), 1e-4);
  EXPECT_NEAR(s.mean - s.low, s.high - s.mean, 1e-12);
  const SeedSummary one = summarise({5});
  EXPECT_EQ(one.sd, 0);
  EXPECT_EQ(one.low, 5);
  EXPECT_EQ(one.high, 5);
}

TEST(AnalysisTest, RhoTableLeavesConstantsUndefinedAndCorrectsTheRest) {
  const std::vector<double> up = {1, 2, 3, 4, 5, 6}, zigzag = {2, 1, 4, 3, 6, 5}, flat(6, 128);
  const std::vector<double> r1 = {10, 20, 30, 40, 50, 60}, r2 = {60, 10, 50, 20, 40, 30};
  auto table = rho_table({"up", "zigzag", "volume"}, {up, zigzag, flat}, {"a", "b"}, {r1, r2});
  ASSERT_TRUE(table.is_ok()) << table.status().message();
  ASSERT_EQ(table->size(), 6u);
  std::vector<double> p;
  for (const RhoCell& c : *table) {
    if (c.metric == "volume") {
      EXPECT_FALSE(c.defined);
      EXPECT_EQ(c.why, "the metric is the same for every source");
      continue;
    }
    ASSERT_TRUE(c.defined);
    const auto& x = c.metric == "up" ? up : zigzag;
    const auto& y = c.dimension == "a" ? r1 : r2;
    EXPECT_DOUBLE_EQ(c.rho, *spearman_rho(x, y));
    EXPECT_DOUBLE_EQ(c.p, *spearman_exact_p(x, y));
    p.push_back(c.p);
  }
  const std::vector<double> holm = holm_adjust(p);
  size_t i = 0;
  for (const RhoCell& c : *table) {
    if (c.defined) {
      EXPECT_DOUBLE_EQ(c.p_holm, holm[i++]);
    }
  }
  EXPECT_DOUBLE_EQ((*table)[0].rho, 1.0);
  EXPECT_NEAR((*table)[0].p, 2.0 / 720, 1e-15);  // identity and reversal of 6! orderings
}

// A mirrored metric (1 - x) repeats the tests of x: the same p, counted once in Holm's family.
TEST(AnalysisTest, MirroredMetricsCountOnceInTheFamily) {
  const std::vector<double> x = {0.1, 0.4, 0.2, 0.8, 0.6, 0.3}, mirror = {0.9, 0.6, 0.8, 0.2, 0.4, 0.7};
  const std::vector<double> r1 = {10, 30, 20, 60, 40, 50}, r2 = {60, 10, 50, 20, 40, 30};
  auto table = rho_table({"x", "one_minus_x"}, {x, mirror}, {"a", "b"}, {r1, r2});
  ASSERT_TRUE(table.is_ok());
  const std::vector<double> holm = holm_adjust({(*table)[0].p, (*table)[1].p});  // a family of two
  for (size_t d = 0; d < 2; ++d) {
    const RhoCell &c = (*table)[d], &m = (*table)[2 + d];
    EXPECT_DOUBLE_EQ(m.rho, -c.rho);
    EXPECT_DOUBLE_EQ(m.p, c.p);
    EXPECT_DOUBLE_EQ(c.p_holm, holm[d]);
    EXPECT_DOUBLE_EQ(m.p_holm, holm[d]);
    EXPECT_EQ(m.why, "the same test as x (ranks equal or mirrored), counted once");
  }
}

TEST(AnalysisTest, RhoTableRejectsMismatchedLengths) {
  EXPECT_FALSE(rho_table({"m"}, {{1, 2, 3}}, {"a"}, {{1, 2}}).is_ok());
  EXPECT_FALSE(rho_table({"m", "n"}, {{1, 2, 3}}, {"a"}, {{1, 2, 3}}).is_ok());
  EXPECT_EQ(rho_table({"m"}, {{1, 2}}, {"a"}, {{1, 2}}).status().message(),
            "rho table: 2 sources, the exact test takes 3..16");
}

}  // namespace
}  // namespace clustertwin::models::igsp
