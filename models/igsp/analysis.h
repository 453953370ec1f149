#pragma once

// The IGSP study's analysis, apart from the models that produce its numbers:
// the table of Spearman correlations between each calibration-set metric and each
// dimension's retention over the sources, with exact permutation p-values
// and Holm's correction over every test in the table.

#include <string>
#include <vector>

#include "common/statistics.h"
#include "common/status.h"

namespace clustertwin::models::igsp {

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

}  // namespace clustertwin::models::igsp
