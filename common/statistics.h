#pragma once

// The statistics the layers share, one module: quantiles and a robust line
// (the calibrators' fits: a few wild points, a descheduled process, must
// not tilt a cost line), and Spearman's rank correlation with its exact
// permutation p-value and Holm's correction (the IGSP study: with n = 15
// sources the 5% critical |rho| is about 0.52, so exact p-values and a
// correction over the many metric x dimension tests matter).

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace clustertwin {

/// The q-quantile of `values` (linear interpolation between order
/// statistics); 0 for none.
double quantile(std::vector<double> values, double q);

/// A line y = intercept + slope x.
struct Line {
  double intercept = 0;
  double slope = 0;
};

/// A robust line through (x[i], y[i]) with weights w[i] (empty: all 1):
/// iteratively reweighted least squares with Huber's weights, the scale the
/// residuals' median absolute deviation, so that a few wild points (a
/// descheduled process, a page fault) do not tilt it. With a single distinct
/// x the slope is 0 and the intercept the weighted mean.
Line robust_line(const std::vector<double>& x, const std::vector<double>& y, std::vector<double> w = {});

/// The p-quantile of Student's t with `df` degrees of freedom (p in (0, 1),
/// df >= 1): bisection on the CDF, integrated by Simpson's rule.
double student_t_quantile(double p, int df);

/// A mean over seeds (or any runs) with its Student-t interval.
struct SeedSummary {
  int n = 0;
  double mean = 0, sd = 0;   // sd: the sample standard deviation (0 for n = 1)
  double low = 0, high = 0;  // the two-sided `level` t-interval of the mean (= mean for n = 1)
};
SeedSummary summarise(const std::vector<double>& values, double level = 0.95);

/// Ranks 1..n, ties given their mean rank.
std::vector<double> ranks(const std::vector<double>& values);

/// Spearman's rho: Pearson's correlation of the ranks (ties averaged).
/// InvalidArgument for fewer than 3 pairs, unequal lengths, or a constant side.
StatusOr<double> spearman_rho(const std::vector<double>& x, const std::vector<double>& y);

/// The exact two-sided permutation p-value of Spearman's rho: the share of
/// the n! orderings of y whose |rho| is at least the observed one, counted
/// exactly by dynamic programming over (items used, sum of squared rank
/// differences); with the marginal ranks fixed each sum gives one rho. Ties
/// keep their mean ranks (the conditional permutation test: ranks doubled
/// to stay integers, which makes the programme about 4x larger). Up to
/// n = 16 (2^n item sets; n = 15, the study's, takes about a second without
/// ties). InvalidArgument for n < 3, n > 16 or a constant side.
StatusOr<double> spearman_exact_p(const std::vector<double>& x, const std::vector<double>& y);

/// The same for a given n and rho (ties excluded): the share of the n!
/// orderings whose |rho| is at least |rho|.
StatusOr<double> spearman_exact_p_for(int n, double rho);

/// Holm's step-down adjustment of p-values (family-wise error), in the
/// input order: the i-th smallest is multiplied by (m - i + 1), then made
/// monotone and capped at 1.
std::vector<double> holm_adjust(const std::vector<double>& p);

}  // namespace clustertwin
