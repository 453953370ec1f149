// Spearman's rho, its exact permutation p-value (checked against brute-force
// enumeration of every ordering), and Holm's adjustment.

#include "common/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clustertwin {
namespace {

TEST(StatisticsTest, RanksAverageTies) {
  EXPECT_EQ(ranks({10, 30, 20, 30}), (std::vector<double>{1, 3.5, 2, 3.5}));
}

TEST(StatisticsTest, RhoOfPerfectAndReversedOrder) {
  EXPECT_DOUBLE_EQ(*spearman_rho({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(*spearman_rho({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Monotone transforms do not matter.
  EXPECT_DOUBLE_EQ(*spearman_rho({1, 2, 3, 4, 5}, {1, 8, 27, 64, 125}), 1.0);
  EXPECT_FALSE(spearman_rho({1, 2}, {1, 2}).is_ok());
  EXPECT_FALSE(spearman_rho({1, 2, 3}, {1, 2}).is_ok());
  EXPECT_EQ(spearman_rho({1, 2, 3}, {5, 5, 5}).status().message(), "spearman: one side is constant, rho is undefined");
}

// The exact p-value equals the brute-force share of all n! orderings with |rho| >= |observed|.
// The share of every distinct arrangement of y whose |rho| with x is at least the observed one (each
// arrangement stands for the same number of the n! orderings, ties or not).
double enumerated_p(const std::vector<double>& x, const std::vector<double>& y) {
  const double observed = std::abs(*spearman_rho(x, y));
  std::vector<double> perm = y;
  std::sort(perm.begin(), perm.end());
  int64_t all = 0, extreme = 0;
  do {
    ++all;
    auto r = spearman_rho(x, perm);
    if (r.is_ok() && std::abs(*r) >= observed - 1e-12) ++extreme;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return static_cast<double>(extreme) / static_cast<double>(all);
}

TEST(StatisticsTest, ExactPMatchesEnumeration) {
  for (int n : {4, 6, 8}) {
    std::vector<double> x(n), y = {3, 1, 4, 8, 5, 2, 7, 6};
    std::iota(x.begin(), x.end(), 1.0);
    y.resize(n);
    for (int i = 0; i < n; ++i)
      y[i] = y[i] > n ? static_cast<double>(i) + 0.5 : y[i];  // keep distinct values
    auto p = spearman_exact_p(x, y);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_NEAR(*p, enumerated_p(x, y), 1e-12) << n;
  }
}

// With ties (both sides), the conditional permutation test: ties keep their mean ranks, and every
// distinct arrangement of y (each stands for the same number of the n! orderings) counts once.
TEST(StatisticsTest, ExactPWithTiesMatchesEnumeration) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{1, 2, 2, 3, 4, 5, 6}, {0.1, 0.1, 0.3, 0.2, 0.5, 0.5, 0.9}},
      {{1, 1, 1, 2, 3, 4, 5, 6}, {8, 7, 7, 5, 4, 4, 4, 1}},
      {{3, 1, 4, 1, 5, 9, 2, 6}, {2, 7, 1, 8, 2, 8, 1, 8}},
  };
  for (const auto& [x, y] : cases) {
    auto p = spearman_exact_p(x, y);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_NEAR(*p, enumerated_p(x, y), 1e-12) << x.size();
    EXPECT_LT(*p, 1.0 + 1e-12);
  }
}

TEST(StatisticsTest, ExactPOfTheStudysSizeAndItsLimits) {
  std::vector<double> x(15), y(15);
  std::iota(x.begin(), x.end(), 1.0);
  y = x;
  // rho = 1 with n = 15: only the identity and the reversal reach |rho| = 1.
  auto p = spearman_exact_p(x, y);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  double factorial = 1;
  for (int i = 2; i <= 15; ++i)
    factorial *= i;
  EXPECT_NEAR(*p, 2 / factorial, 1e-24);
  EXPECT_FALSE(spearman_exact_p({1, 2, 3, 4}, {2, 2, 2, 2}).is_ok());  // constant
  std::vector<double> big(17);
  std::iota(big.begin(), big.end(), 1.0);
  EXPECT_FALSE(spearman_exact_p(big, big).is_ok());
}

// The null is symmetric (reversing y flips rho, not p) and |rho| ordered the other way round from p;
// and a table value: at n = 15 the two-sided 5% critical |rho| is about 0.52 (igsp.md).
TEST(StatisticsTest, ExactPIsSymmetricMonotoneAndMatchesTheCriticalValue) {
  std::vector<double> x(15);
  std::iota(x.begin(), x.end(), 1.0);
  const std::vector<double> weak = {4, 9, 1, 12, 2, 8, 15, 3, 5, 14, 6, 11, 13, 7, 10};
  const std::vector<double> strong = {2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 15};
  std::vector<double> flipped = weak;
  for (double& v : flipped)
    v = 16 - v;
  const double p_weak = *spearman_exact_p(x, weak), p_strong = *spearman_exact_p(x, strong);
  EXPECT_NEAR(*spearman_rho(x, flipped), -*spearman_rho(x, weak), 1e-12);
  EXPECT_NEAR(*spearman_exact_p(x, flipped), p_weak, 1e-15);
  EXPECT_GT(std::abs(*spearman_rho(x, strong)), std::abs(*spearman_rho(x, weak)));
  EXPECT_LT(p_strong, p_weak);
  // Zar's table (Biostatistical Analysis, App. B.20): n = 15, two-sided alpha 0.05, critical rho 0.521.
  // rho moves in steps of 6 x 2 / 3360: S = 268 gives 0.5214, S = 270 gives 0.5179.
  EXPECT_LE(*spearman_exact_p_for(15, 1 - 6.0 * 268 / 3360), 0.05);
  EXPECT_GT(*spearman_exact_p_for(15, 1 - 6.0 * 270 / 3360), 0.05);
  EXPECT_DOUBLE_EQ(*spearman_exact_p_for(15, 0), 1.0);
}

TEST(StatisticsTest, HolmAdjustsInInputOrder) {
  const auto a = holm_adjust({0.01, 0.04, 0.03, 0.005});
  // Sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> monotone 0.06.
  ASSERT_EQ(a.size(), 4u);
  EXPECT_DOUBLE_EQ(a[3], 0.02);
  EXPECT_DOUBLE_EQ(a[0], 0.03);
  EXPECT_DOUBLE_EQ(a[2], 0.06);
  EXPECT_DOUBLE_EQ(a[1], 0.06);
  EXPECT_EQ(holm_adjust({0.9, 0.8}), (std::vector<double>{1.0, 1.0}));
}

}  // namespace
}  // namespace clustertwin
