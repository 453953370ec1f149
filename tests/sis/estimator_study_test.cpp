// The estimator study on a small grid: unbiased estimators measure no bias
// beyond their noise floor, truncated and uncorrected ones under large drift
// do, SIS's acceptance falls with drift, and the output is deterministic.

#include "real/sis/estimator_study.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace clustertwin::real::sis {
namespace {

const EstimatorRow& row(const EstimatorStudy& s, int64_t length, double drift, const std::string& estimator) {
  for (const EstimatorRow& r : s.rows) {
    if (r.length == length && r.drift == drift && r.estimator == estimator) return r;
  }
  ADD_FAILURE() << "no row " << length << " " << drift << " " << estimator;
  return s.rows.front();
}

EstimatorStudyOptions small() {
  EstimatorStudyOptions o;
  o.lengths = {4, 12};
  o.drifts = {0.1, 1.0};
  o.replicates = 400;
  o.batch = 16;
  return o;
}

TEST(EstimatorStudyTest, UnbiasedEstimatorsStayWithinTheirNoiseBiasedOnesDoNot) {
  auto s = run_estimator_study(small());
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->rows.size(), 2u * 2u * 10u);
  for (int64_t t : {4, 12}) {
    for (double d : {0.1, 1.0}) {
      for (const char* e : {"on-policy", "seq-is"}) {
        const EstimatorRow& r = row(*s, t, d, e);
        // The bias estimate subtracts the noise; what is left is below 4 noise-floor units for an unbiased one.
        EXPECT_LT(r.bias, 4 * r.bias_se) << e << " T " << t << " drift " << d;
        EXPECT_NEAR(r.mse, r.bias * r.bias + r.variance, 0.05 * r.mse + 1e-12) << e;
      }
    }
  }
  // Truncation, and GSPO's one weight per sequence, trade bias for variance: at drift 1 their bias stands far
  // above its noise, and so does SIS's (its accepted tokens go uncorrected).
  for (const char* e : {"tis", "gspo", "naive", "sis-exact"}) {
    const EstimatorRow& r = row(*s, 12, 1.0, e);
    EXPECT_GT(r.bias, 6 * r.bias_se) << e;
  }
  // More drift, fewer accepted tokens.
  EXPECT_GT(row(*s, 12, 0.1, "sis-exact").acceptance, row(*s, 12, 1.0, "sis-exact").acceptance + 0.3);
  EXPECT_TRUE(std::isnan(row(*s, 12, 0.1, "token-is").acceptance));
  EXPECT_DOUBLE_EQ(row(*s, 4, 1.0, "on-policy").ess, 1.0);
  EXPECT_EQ(s->verdicts.size(), 4u);
}

TEST(EstimatorStudyTest, SameOptionsSameBytes) {
  EstimatorStudyOptions o = small();
  o.replicates = 60;
  const std::string a = estimator_csv(*run_estimator_study(o)), b = estimator_csv(*run_estimator_study(o));
  EXPECT_EQ(a, b);
  o.seed = 1;
  EXPECT_NE(estimator_csv(*run_estimator_study(o)), a);
}

TEST(EstimatorStudyTest, BadOptionsNameTheFlag) {
  EstimatorStudyOptions o;
  o.lengths = {0};
  EXPECT_EQ(validate(o).message(), "lengths 0 is outside [1, 4096]");
  o = {};
  o.drifts = {-1};
  EXPECT_EQ(validate(o).message(), "drifts -1 is outside [0, 10]");
  o = {};
  o.top_k = 9;
  EXPECT_EQ(validate(o).message(), "top_k 9 is outside [1, 8] (the vocabulary)");
  o = {};
  o.replicates = 1;
  EXPECT_EQ(validate(o).message(), "replicates 1 must be >= 2");
}

}  // namespace
}  // namespace clustertwin::real::sis
