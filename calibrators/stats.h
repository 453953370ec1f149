#pragma once

// The small statistics the fits share.

#include <vector>

namespace clustertwin::calibrators {

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

}  // namespace clustertwin::calibrators
