#include "models/igsp/analysis.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/statistics.h"

namespace clustertwin::models::igsp {
namespace {

// Names and values pair up, every list has a value per source, and the sources are 3..16.
Status check_rho_inputs(const std::vector<std::string>& metrics, const std::vector<std::vector<double>>& metric_values,
                        const std::vector<std::string>& dimensions, const std::vector<std::vector<double>>& retention) {
  if (metrics.size() != metric_values.size() || dimensions.size() != retention.size())
    return Status::invalid_argument("rho table: names and value lists do not pair up");
  const size_t n = metric_values.empty() ? 0 : metric_values[0].size();
  auto same_length = [n](const std::vector<double>& v) { return v.size() == n; };
  if (!std::all_of(metric_values.begin(), metric_values.end(), same_length) ||
      !std::all_of(retention.begin(), retention.end(), same_length)) {
    return Status::invalid_argument("rho table: every metric and dimension needs a value per source");
  }
  if (n < 3 || n > 16)
    return Status::invalid_argument("rho table: " + std::to_string(n) + " sources, the exact test takes 3..16");
  return Status::ok();
}

bool is_constant(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [&](double x) { return x == v[0]; });
}

// A metric whose ranks equal or mirror an earlier one's (the two aggregation signs) repeats that
// metric's tests: it is reported, but counted once in Holm's family. Returns, per metric, the first metric
// with its ranks (itself if none).
std::vector<size_t> first_with_same_ranks(const std::vector<std::vector<double>>& metric_values, size_t n) {
  std::vector<size_t> same_as(metric_values.size());
  for (size_t m = 0; m < metric_values.size(); ++m) {
    same_as[m] = m;
    const std::vector<double> rm = ranks(metric_values[m]);
    for (size_t earlier = 0; earlier < m && same_as[m] == m; ++earlier) {
      const std::vector<double> re = ranks(metric_values[earlier]);
      bool equal = true, mirrored = true;
      for (size_t s = 0; s < n; ++s) {
        equal = equal && rm[s] == re[s];
        mirrored = mirrored && rm[s] + re[s] == static_cast<double>(n + 1);
      }
      if (equal || mirrored) same_as[m] = earlier;
    }
  }
  return same_as;
}

}  // namespace

StatusOr<std::vector<RhoCell>> rho_table(const std::vector<std::string>& metrics,
                                         const std::vector<std::vector<double>>& metric_values,
                                         const std::vector<std::string>& dimensions,
                                         const std::vector<std::vector<double>>& retention) {
  CT_RETURN_IF_ERROR(check_rho_inputs(metrics, metric_values, dimensions, retention));
  const size_t n = metric_values.empty() ? 0 : metric_values[0].size();
  const std::vector<size_t> same_as = first_with_same_ranks(metric_values, n);
  std::vector<RhoCell> cells;
  std::vector<double> p;
  std::vector<size_t> defined;  // cells in the family
  for (size_t m = 0; m < metrics.size(); ++m) {
    for (size_t d = 0; d < dimensions.size(); ++d) {
      RhoCell c;
      c.metric = metrics[m];
      c.dimension = dimensions[d];
      if (is_constant(metric_values[m])) {
        c.why = "the metric is the same for every source";
      } else if (is_constant(retention[d])) {
        c.why = "the retention is the same for every source";
      } else {
        auto rho = spearman_rho(metric_values[m], retention[d]);
        auto exact = spearman_exact_p(metric_values[m], retention[d]);
        if (!rho.is_ok()) return rho.status();
        if (!exact.is_ok()) return exact.status();
        c.defined = true;
        c.rho = *rho;
        c.p = *exact;
        if (same_as[m] == m) {
          p.push_back(c.p);
          defined.push_back(cells.size());
        } else {
          c.why = "the same test as " + metrics[same_as[m]] + " (ranks equal or mirrored), counted once";
        }
      }
      cells.push_back(c);
    }
  }
  const std::vector<double> adjusted = holm_adjust(p);
  for (size_t i = 0; i < defined.size(); ++i)
    cells[defined[i]].p_holm = adjusted[i];
  for (size_t m = 0; m < metrics.size(); ++m) {
    for (size_t d = 0; d < dimensions.size() && same_as[m] != m; ++d) {
      RhoCell& c = cells[m * dimensions.size() + d];
      if (c.defined) c.p_holm = cells[same_as[m] * dimensions.size() + d].p_holm;
    }
  }
  return cells;
}

}  // namespace clustertwin::models::igsp
