#include "common/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clustertwin {
namespace {

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n, mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

Status check_pairs(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) {
    return Status::invalid_argument("spearman: " + std::to_string(x.size()) + " and " + std::to_string(y.size()) +
                                    " values do not pair up");
  }
  if (x.size() < 3) return Status::invalid_argument("spearman: " + std::to_string(x.size()) + " pairs, need 3");
  return Status::ok();
}

}  // namespace

std::vector<double> ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> out(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]])
      ++j;
    const double mean_rank = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k)
      out[order[k]] = mean_rank;
    i = j + 1;
  }
  return out;
}

StatusOr<double> spearman_rho(const std::vector<double>& x, const std::vector<double>& y) {
  CT_RETURN_IF_ERROR(check_pairs(x, y));
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  if (std::all_of(rx.begin(), rx.end(), [&](double r) { return r == rx[0]; }) ||
      std::all_of(ry.begin(), ry.end(), [&](double r) { return r == ry[0]; })) {
    return Status::invalid_argument("spearman: one side is constant, rho is undefined");
  }
  return pearson(rx, ry);
}

namespace {

// The permutation null of S = sum_i (a_i - b_pi(i))^2 over all n! orderings pi, for integer scores a
// (positions) and b (items): count[S]. Counts stay below 16! < 2^53, exact in doubles. A dynamic programme
// over (items used, partial S), layer by layer (by popcount), freeing each layer once it has fed the next:
// about two layers of C(n, n/2) masks live at once.
std::vector<double> null_counts(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const int n = static_cast<int>(a.size());
  // The largest S pairs a ascending with b descending (rearrangement inequality).
  std::vector<int64_t> as = a, bs = b;
  std::sort(as.begin(), as.end());
  std::sort(bs.rbegin(), bs.rend());
  int64_t max_s = 0;
  for (int i = 0; i < n; ++i)
    max_s += (as[i] - bs[i]) * (as[i] - bs[i]);
  const size_t masks = size_t{1} << n;
  std::vector<std::vector<double>> count(masks);
  count[0].assign(1, 1.0);
  for (int position = 0; position < n; ++position) {
    for (size_t mask = 0; mask < masks; ++mask) {
      if (count[mask].empty() || __builtin_popcountll(mask) != position) continue;
      const std::vector<double>& from = count[mask];
      for (int r = 0; r < n; ++r) {
        if (mask & (size_t{1} << r)) continue;
        const size_t d2 = static_cast<size_t>((a[position] - b[r]) * (a[position] - b[r]));
        std::vector<double>& to = count[mask | (size_t{1} << r)];
        if (to.size() < from.size() + d2)
          to.resize(std::min<size_t>(from.size() + d2, static_cast<size_t>(max_s) + 1), 0.0);
        for (size_t v = 0; v < from.size() && v + d2 < to.size(); ++v)
          to[v + d2] += from[v];
      }
      std::vector<double>().swap(count[mask]);
    }
  }
  return count[masks - 1];
}

// Ranks as integers: the midranks doubled, halved again when no tie made a half.
std::pair<std::vector<int64_t>, std::vector<int64_t>> integer_ranks(const std::vector<double>& rx,
                                                                    const std::vector<double>& ry) {
  std::vector<int64_t> a(rx.size()), b(ry.size());
  bool halves = false;
  for (size_t i = 0; i < rx.size(); ++i) {
    a[i] = std::llround(2 * rx[i]);
    b[i] = std::llround(2 * ry[i]);
    halves = halves || a[i] % 2 != 0 || b[i] % 2 != 0;
  }
  if (!halves) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] /= 2;
      b[i] /= 2;
    }
  }
  return {a, b};
}

}  // namespace

StatusOr<double> spearman_exact_p(const std::vector<double>& x, const std::vector<double>& y) {
  CT_RETURN_IF_ERROR(check_pairs(x, y));
  if (x.size() > 16)
    return Status::invalid_argument("spearman_exact_p: " + std::to_string(x.size()) + " pairs, need 3..16");
  auto rho = spearman_rho(x, y);
  if (!rho.is_ok()) return rho.status();
  // With the marginal ranks fixed, sum rx ry = (sum rx^2 + sum ry^2 - S) / 2, so each S gives one rho.
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const auto [a, b] = integer_ranks(rx, ry);
  const double n = static_cast<double>(x.size());
  double saa = 0, sbb = 0, sa = 0, sb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    saa += static_cast<double>(a[i] * a[i]);
    sbb += static_cast<double>(b[i] * b[i]);
    sa += static_cast<double>(a[i]);
    sb += static_cast<double>(b[i]);
  }
  const double denominator = std::sqrt((saa - sa * sa / n) * (sbb - sb * sb / n));
  const double observed = std::abs(*rho) * (1 - 1e-9);
  const std::vector<double> counts = null_counts(a, b);
  double total = 0, extreme = 0;
  for (size_t v = 0; v < counts.size(); ++v) {
    total += counts[v];
    const double r = ((saa + sbb - static_cast<double>(v)) / 2 - sa * sb / n) / denominator;
    if (std::abs(r) >= observed) extreme += counts[v];
  }
  return extreme / total;
}

StatusOr<double> spearman_exact_p_for(int n, double rho) {
  if (n < 3 || n > 16) return Status::invalid_argument("spearman_exact_p: " + std::to_string(n) + " pairs, need 3..16");
  // Without ties rho = 1 - 6 S / (n (n^2 - 1)); |rho| >= |rho_obs| iff |6 S - n (n^2 - 1)| >= |rho_obs| n (n^2 - 1).
  const int64_t n3 = static_cast<int64_t>(n) * (static_cast<int64_t>(n) * n - 1);
  const double observed_dev = std::abs(rho) * static_cast<double>(n3) - 1e-9 * static_cast<double>(n3);
  std::vector<int64_t> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), int64_t{1});
  const std::vector<double> counts = null_counts(r, r);
  double total = 0, extreme = 0;
  for (size_t v = 0; v < counts.size(); ++v) {
    total += counts[v];
    if (std::abs(static_cast<double>(6 * static_cast<int64_t>(v) - n3)) >= observed_dev) extreme += counts[v];
  }
  return extreme / total;
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 0;
  for (size_t i = 0; i < m; ++i) {
    running = std::max(running, std::min(1.0, p[order[i]] * static_cast<double>(m - i)));
    out[order[i]] = running;
  }
  return out;
}

// ---- quantiles and the robust line ----

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

// ---- means over seeds with Student-t intervals ----
namespace {

// P(T <= t) for t >= 0: 1/2 plus the density's integral over [0, t].
double student_t_cdf(double t, int df) {
  const double nu = df;
  const double log_norm = std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * M_PI);
  auto density = [&](double x) { return std::exp(log_norm - (nu + 1) / 2 * std::log1p(x * x / nu)); };
  const int steps = 4000;  // even, for Simpson
  const double h = t / steps;
  double sum = density(0) + density(t);
  for (int i = 1; i < steps; ++i)
    sum += (i % 2 == 1 ? 4 : 2) * density(i * h);
  return 0.5 + sum * h / 3;
}

}  // namespace

double student_t_quantile(double p, int df) {
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  double low = 0, high = 1;
  while (student_t_cdf(high, df) < p && high < 1e6)
    high *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = (low + high) / 2;
    (student_t_cdf(mid, df) < p ? low : high) = mid;
  }
  return (low + high) / 2;
}

SeedSummary summarise(const std::vector<double>& values, double level) {
  SeedSummary s;
  s.n = static_cast<int>(values.size());
  if (s.n == 0) return s;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / s.n;
  s.low = s.high = s.mean;
  if (s.n < 2) return s;
  double ss = 0;
  for (double v : values)
    ss += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(ss / (s.n - 1));
  const double half = student_t_quantile(0.5 + level / 2, s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
  s.low = s.mean - half;
  s.high = s.mean + half;
  return s;
}

}  // namespace clustertwin
