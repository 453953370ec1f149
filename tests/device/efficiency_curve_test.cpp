// The efficiency curve (models/device/efficiency_curve.h): exact at its
// knots, linear in log(size) and monotone between them, clamped beyond.

#include "models/device/efficiency_curve.h"

#include <gtest/gtest.h>

#include <cmath>

namespace clustertwin::device {
namespace {

EfficiencyCurve three_knots() {
  // The h200 attention curve's shape: 0.15 at 1024 tokens, 0.35 at 4096, 0.49 at 16384.
  return *EfficiencyCurve::make({{1024, 0.15}, {4096, 0.35}, {16384, 0.49}}, "test");
}

TEST(EfficiencyCurveTest, ExactAtEveryKnot) {
  const EfficiencyCurve c = three_knots();
  for (const EfficiencyKnot& k : c.knots())
    EXPECT_EQ(c.at(k.size), k.efficiency) << k.size;
}

TEST(EfficiencyCurveTest, LogLinearAndMonotoneBetweenKnots) {
  const EfficiencyCurve c = three_knots();
  // 2048 is halfway from 1024 to 4096 in log(size): halfway from 0.15 to 0.35.
  EXPECT_NEAR(c.at(2048), 0.25, 1e-15);
  // 8192 halfway from 4096 to 16384: (0.35 + 0.49) / 2.
  EXPECT_NEAR(c.at(8192), 0.42, 1e-15);
  double last = 0;
  for (double s = 1024; s <= 16384; s *= 1.01) {
    EXPECT_GE(c.at(s), last) << s;
    last = c.at(s);
  }
}

TEST(EfficiencyCurveTest, ClampedBeyondTheEnds) {
  const EfficiencyCurve c = three_knots();
  EXPECT_EQ(c.at(1), 0.15);
  EXPECT_EQ(c.at(1023), 0.15);
  EXPECT_EQ(c.at(16385), 0.49);
  EXPECT_EQ(c.at(1e12), 0.49);
  const EfficiencyCurve one = *EfficiencyCurve::make({{100, 0.7}}, "test");
  EXPECT_EQ(one.at(1), 0.7);
  EXPECT_EQ(one.at(1e9), 0.7);
}

// Each bad curve names the offending knot and its value.
TEST(EfficiencyCurveTest, BadKnotsAreNamed) {
  struct Case {
    std::vector<EfficiencyKnot> knots;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, "f.yaml: gemm: no knot (at least one size and efficiency)"},
      {{{0, 0.5}}, "f.yaml: gemm knot 0 (size 0, efficiency 0.5): size must be > 0 and finite"},
      {{{10, 1.5}}, "f.yaml: gemm knot 0 (size 10, efficiency 1.5): efficiency must be in (0, 1]"},
      {{{10, 0.5}, {10, 0.6}},
       "f.yaml: gemm knot 1 (size 10, efficiency 0.6): sizes must increase (the one before "
       "is 10)"},
      {{{10, 0.5}, {20, 0.4}},
       "f.yaml: gemm knot 1 (size 20, efficiency 0.4): efficiency must not fall as the size "
       "grows (the one before is 0.5)"},
  };
  for (const Case& c : cases) {
    auto curve = EfficiencyCurve::make(c.knots, "f.yaml: gemm");
    ASSERT_FALSE(curve.is_ok());
    EXPECT_EQ(curve.status().message(), c.message);
  }
}

}  // namespace
}  // namespace clustertwin::device
