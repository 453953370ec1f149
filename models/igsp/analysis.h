#pragma once

// The IGSP study's analysis, apart from the models that produce its numbers:
// summaries over seeds with Student-t confidence intervals, and the table of
// Spearman correlations between each calibration-set metric and each
// dimension's retention over the sources, with exact permutation p-values
// and Holm's correction over every test in the table.

#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::igsp {

/// The p-quantile of Student's t with `df` degrees of freedom (p in (0, 1),
/// df >= 1): bisection on the CDF, integrated by Simpson's rule.
double student_t_quantile(double p, int df);

struct SeedSummary {
  int n = 0;
  double mean = 0, sd = 0;   // sd: the sample standard deviation (0 for n = 1)
  double low = 0, high = 0;  // the two-sided `level` t-interval of the mean (= mean for n = 1)
};
SeedSummary summarise(const std::vector<double>& values, double level = 0.95);

/// One cell of the rho table. `defined` is false when the metric (or the
/// retention) does not vary over the sources, with `why` saying so.
struct RhoCell {
  std::string metric, dimension;
  bool defined = false;
  std::string why;  // undefined: why; a repeated test: of which metric
  double rho = 0, p = 1, p_holm = 1;
};

/// rho of every metric against every dimension over the sources:
/// metric_values[m][s] and retention[d][s] for source s. The Holm family is
/// every defined cell, except that a metric whose ranks equal or mirror an
/// earlier metric's (the two aggregation signs) repeats its tests: its
/// cells take the earlier metric's Holm p and `why` says so. InvalidArgument when the lengths disagree or there
/// are fewer than 3 or more than 16 sources (the exact test's range).
StatusOr<std::vector<RhoCell>> rho_table(const std::vector<std::string>& metrics,
                                         const std::vector<std::vector<double>>& metric_values,
                                         const std::vector<std::string>& dimensions,
                                         const std::vector<std::vector<double>>& retention);

}  // namespace clustertwin::igsp
