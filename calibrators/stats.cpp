#include "calibrators/stats.h"

#include <algorithm>
#include <cmath>

namespace clustertwin::calibrators {
namespace {

// Weighted least squares of y on x with weights w (every w >= 0).
Line weighted_line(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w) {
  double sw = 0, sx = 0, sy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sw += w[i];
    sx += w[i] * x[i];
    sy += w[i] * y[i];
  }
  if (sw <= 0) return {};
  const double mx = sx / sw, my = sy / sw;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += w[i] * (x[i] - mx) * (x[i] - mx);
    sxy += w[i] * (x[i] - mx) * (y[i] - my);
  }
  // A spread of x below rounding noise is no spread: one distinct x.
  if (sxx <= 1e-12 * std::max(1.0, mx * mx) * sw) return {my, 0};
  const double slope = sxy / sxx;
  return {my - slope * mx, slope};
}

}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Line robust_line(const std::vector<double>& x, const std::vector<double>& y, std::vector<double> w) {
  if (w.empty()) w.assign(x.size(), 1.0);
  Line line = weighted_line(x, y, w);
  std::vector<double> weights = w, residuals(x.size());
  for (int iteration = 0; iteration < 50; ++iteration) {
    std::vector<double> abs_residuals(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      residuals[i] = y[i] - (line.intercept + line.slope * x[i]);
      abs_residuals[i] = std::abs(residuals[i]);
    }
    // Huber's k = 1.345 sigma, sigma from the MAD (1.4826 MAD for normal noise).
    const double sigma = 1.4826 * quantile(abs_residuals, 0.5);
    if (sigma <= 0) break;  // at least half the points on the line: it is the fit
    const double k = 1.345 * sigma;
    for (size_t i = 0; i < x.size(); ++i)
      weights[i] = w[i] * (abs_residuals[i] <= k ? 1.0 : k / abs_residuals[i]);
    const Line next = weighted_line(x, y, weights);
    const bool converged = std::abs(next.slope - line.slope) <= 1e-12 * std::abs(line.slope) + 1e-300 &&
                           std::abs(next.intercept - line.intercept) <= 1e-12 * std::abs(line.intercept) + 1e-300;
    line = next;
    if (converged) break;
  }
  return line;
}

}  // namespace clustertwin::calibrators
