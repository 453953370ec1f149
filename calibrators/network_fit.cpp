#include "calibrators/network_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "common/statistics.h"
#include "sim/core/collective_bench.h"
#include "traces/trace_reader.h"

namespace clustertwin::calibrators {
namespace {

// A segment's parameters as the fit sees them: seconds per latency step and
// seconds per bus byte (0 means an unbounded bus bandwidth).
struct SegmentFit {
  double step_latency = 0;
  double seconds_per_bus_byte = 0;
  double max_abs_residual = 0;
};

double regressor_steps(const SizePoint& p, models::CollectiveOp op) {
  return cluster::latency_steps(op, p.group_size);
}
double regressor_bytes(const SizePoint& p, models::CollectiveOp op) {
  return static_cast<double>(p.bytes) * cluster::bus_factor(op, p.group_size);
}

// Least squares of the relative error over points [first, last], both terms >= 0.
SegmentFit fit_segment(const std::vector<SizePoint>& points, size_t first, size_t last, models::CollectiveOp op) {
  // Weighted normal equations, weight 1 / y^2: minimise sum ((a s + b x - y) / y)^2.
  double ss = 0, sx = 0, xx = 0, sy = 0, xy = 0;
  for (size_t i = first; i <= last; ++i) {
    const double s = regressor_steps(points[i], op), x = regressor_bytes(points[i], op), y = points[i].mean_s;
    const double w = 1.0 / (y * y);
    ss += w * s * s;
    sx += w * s * x;
    xx += w * x * x;
    sy += w * s * y;
    xy += w * x * y;
  }
  SegmentFit f;
  const double det = ss * xx - sx * sx;
  double a = det > 1e-12 * ss * xx ? (sy * xx - xy * sx) / det : -1;
  double b = det > 1e-12 * ss * xx ? (xy * ss - sy * sx) / det : -1;
  if (a < 0 || b < 0) {
    // One term alone: the better of latency only and bandwidth only.
    const double a_only = ss > 0 ? sy / ss : 0, b_only = xx > 0 ? xy / xx : 0;
    auto error = [&](double aa, double bb) {
      double e = 0;
      for (size_t i = first; i <= last; ++i) {
        const double r =
            (aa * regressor_steps(points[i], op) + bb * regressor_bytes(points[i], op)) / points[i].mean_s - 1;
        e += r * r;
      }
      return e;
    };
    if (ss > 0 && (xx <= 0 || error(a_only, 0) <= error(0, b_only))) {
      a = a_only;
      b = 0;
    } else {
      a = 0;
      b = b_only;
    }
  }
  f.step_latency = a;
  f.seconds_per_bus_byte = b;
  for (size_t i = first; i <= last; ++i) {
    const double fitted = a * regressor_steps(points[i], op) + b * regressor_bytes(points[i], op);
    f.max_abs_residual = std::max(f.max_abs_residual, std::abs(fitted / points[i].mean_s - 1));
  }
  return f;
}

// The last point of distinct size `size_index` (`size_start`: each distinct size's first point).
size_t last_of_size(const std::vector<size_t>& size_start, size_t points, size_t size_index) {
  return size_index + 1 < size_start.size() ? size_start[size_index + 1] - 1 : points - 1;
}

// The segments as distinct-size index ranges, in order: the fewest whose largest residual is within the
// tolerance, else those with the smallest. A segment spans one size or more (network_fit.h: why one).
std::vector<std::pair<size_t, size_t>> best_segments(const std::vector<SizePoint>& points,
                                                     const std::vector<size_t>& size_start, models::CollectiveOp op,
                                                     const NetworkFitOptions& options) {
  const size_t m = size_start.size();
  const int max_k = std::max(1, std::min<int>(options.max_segments, static_cast<int>(m)));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cost(m, std::vector<double>(m, kInf));
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = i; j < m; ++j)
      cost[i][j] = fit_segment(points, size_start[i], last_of_size(size_start, points.size(), j), op).max_abs_residual;
  }
  // best[k][j]: the smallest largest residual of sizes 0..j in k + 1 segments; from[k][j]: the last one's start.
  std::vector<std::vector<double>> best(max_k, std::vector<double>(m, kInf));
  std::vector<std::vector<size_t>> from(max_k, std::vector<size_t>(m, 0));
  for (size_t j = 0; j < m; ++j)
    best[0][j] = cost[0][j];
  for (int k = 1; k < max_k; ++k) {
    for (size_t j = 0; j < m; ++j) {
      for (size_t i = 1; i <= j; ++i) {
        const double v = std::max(best[k - 1][i - 1], cost[i][j]);
        if (v < best[k][j]) {
          best[k][j] = v;
          from[k][j] = i;
        }
      }
    }
  }
  int k = 0;
  for (int c = 0; c < max_k; ++c) {
    if (best[c][m - 1] <= options.tolerance) {
      k = c;
      break;
    }
    if (best[c][m - 1] < best[k][m - 1]) k = c;
  }
  std::vector<std::pair<size_t, size_t>> ranges;  // distinct-size index ranges, last first
  for (size_t j = m - 1;; --k) {
    const size_t i = k == 0 ? 0 : from[k][j];
    ranges.emplace_back(i, j);
    if (k == 0) break;
    j = i - 1;
  }
  std::reverse(ranges.begin(), ranges.end());
  return ranges;
}

// Fits one collective's points (sorted by bytes, then group size).
NetworkFit fit_op(models::CollectiveOp op, std::vector<SizePoint> points, const NetworkFitOptions& options) {
  NetworkFit fit;
  fit.op = op;
  // Distinct sizes: a segment is a run of whole sizes (every group size of a size together).
  std::vector<size_t> size_start;  // index of the first point of each distinct size
  for (size_t i = 0; i < points.size(); ++i) {
    if (i == 0 || points[i].bytes != points[i - 1].bytes) size_start.push_back(i);
  }
  for (const auto& [i, j] : best_segments(points, size_start, op, options)) {
    const size_t last = last_of_size(size_start, points.size(), j);
    const SegmentFit s = fit_segment(points, size_start[i], last, op);
    cluster::CollectiveSegment segment;
    segment.from_bytes = i == 0 ? 0 : static_cast<double>(points[size_start[i]].bytes);
    segment.step_latency = s.step_latency;
    // No bandwidth term: a bus so fast that it never shows.
    segment.bus_bandwidth = s.seconds_per_bus_byte > 0 ? 1 / s.seconds_per_bus_byte : kLatencyOnlyBusBandwidth;
    fit.segments.push_back(segment);
    for (size_t p = size_start[i]; p <= last; ++p) {
      SizePoint& point = points[p];
      point.fitted_s =
          s.step_latency * regressor_steps(point, op) + s.seconds_per_bus_byte * regressor_bytes(point, op);
      point.residual = point.fitted_s / point.mean_s - 1;
      fit.max_abs_residual = std::max(fit.max_abs_residual, std::abs(point.residual));
    }
  }
  fit.points = std::move(points);
  return fit;
}

}  // namespace

StatusOr<std::vector<CollectiveSample>> collective_samples(const traces::Trace& trace, const std::string& path) {
  // (op, bytes, group size, step) -> latest start and latest end over members.
  std::map<std::tuple<models::CollectiveOp, int64_t, int64_t, int64_t>, std::pair<double, double>> iterations;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const traces::Event& e = trace.events[i];
    if (e.category != traces::Category::kComm) continue;
    auto bad = [&](const std::string& field, const std::string& why) {
      return Status::invalid_argument(path + ": event " + std::to_string(i) + " ('" + e.name + "'): field 'args." +
                                      field + "': " + why);
    };
    if (e.collective.empty()) return bad("collective", "missing: a benchmark event names its collective");
    auto op = models::collective_op_from_name(e.collective);
    if (!op || *op == models::CollectiveOp::kSend || *op == models::CollectiveOp::kRecv)
      return bad("collective", "'" + e.collective + "' is not a benchmarked collective");
    if (!e.bytes || *e.bytes <= 0) return bad("bytes", "missing or not positive");
    if (!e.step) return bad("step", "missing: the benchmark's iteration");
    if (!e.group_size || *e.group_size < 2) return bad("group_size", "missing or below 2");
    auto [it, fresh] = iterations.try_emplace({*op, *e.bytes, *e.group_size, *e.step}, e.ts_us, e.end_us());
    if (!fresh) {
      it->second.first = std::max(it->second.first, e.ts_us);
      it->second.second = std::max(it->second.second, e.end_us());
    }
  }
  std::vector<CollectiveSample> out;
  for (const auto& [key, span] : iterations) {
    const auto& [op, bytes, group_size, step] = key;
    out.push_back({op, static_cast<int>(group_size), bytes, std::max(0.0, span.second - span.first) * 1e-6});
  }
  return out;
}

std::map<models::CollectiveOp, std::vector<SizePoint>> size_points(const std::vector<CollectiveSample>& samples) {
  std::map<models::CollectiveOp, std::map<std::pair<int64_t, int>, std::vector<double>>> by_op;
  for (const CollectiveSample& s : samples) {
    if (s.seconds > 0) by_op[s.op][{s.bytes, s.group_size}].push_back(s.seconds);
  }
  std::map<models::CollectiveOp, std::vector<SizePoint>> out;
  for (const auto& [op, sizes] : by_op) {
    std::vector<SizePoint>& points = out[op];
    for (const auto& [size, times] : sizes) {
      SizePoint p;
      p.bytes = size.first;
      p.group_size = size.second;
      p.samples = static_cast<int>(times.size());
      double sum = 0;
      for (double t : times)
        sum += t;
      p.mean_s = sum / static_cast<double>(times.size());
      p.median_s = quantile(times, 0.5);
      p.spread_s = quantile(times, 0.75) - quantile(times, 0.25);
      points.push_back(p);
    }
  }
  return out;
}

std::vector<NetworkFit> fit_network(const std::vector<CollectiveSample>& samples, const NetworkFitOptions& options) {
  std::vector<NetworkFit> fits;
  for (auto& [op, points] : size_points(samples))
    fits.push_back(fit_op(op, std::move(points), options));
  return fits;
}

StatusOr<std::vector<CollectiveCheck>> check_collectives(const std::vector<std::string>& paths,
                                                         const cluster::ClusterProfile& profile) {
  std::vector<CollectiveSample> samples;
  for (const std::string& path : paths) {
    auto trace = traces::read_trace(path);
    if (!trace.is_ok()) return trace.status();
    if (trace->metadata.system != "collectives") {
      return Status::invalid_argument(path + ": field 'metadata.system': '" + trace->metadata.system +
                                      "' is not a collective benchmark ('collectives')");
    }
    auto more = collective_samples(*trace, path);
    if (!more.is_ok()) return more.status();
    if (more->empty()) return Status::invalid_argument(path + ": a collective benchmark without timed operations");
    samples.insert(samples.end(), more->begin(), more->end());
  }
  if (samples.empty()) return Status::invalid_argument("validate collectives: give at least one benchmark trace");
  std::vector<CollectiveCheck> out;
  for (const auto& [op, points] : size_points(samples)) {
    std::map<int, std::vector<int64_t>> sizes_by_group;
    for (const SizePoint& p : points)
      sizes_by_group[p.group_size].push_back(p.bytes);
    std::map<std::pair<int64_t, int>, double> twin;
    for (const auto& [group_size, sizes] : sizes_by_group) {
      sim::CollectiveBenchOptions o;
      o.op = op;
      o.workers = group_size;
      o.sizes = sizes;
      auto rows = sim::bench_collective(o, profile);
      if (!rows.is_ok()) return rows.status();
      for (const sim::CollectiveBenchRow& row : *rows)
        twin[{row.bytes, group_size}] = row.time_s;
    }
    for (const SizePoint& p : points) {
      CollectiveCheck c;
      c.op = op;
      c.bytes = p.bytes;
      c.group_size = p.group_size;
      c.samples = p.samples;
      c.real_mean_s = p.mean_s;
      c.real_median_s = p.median_s;
      c.real_spread_s = p.spread_s;
      c.twin_s = twin[{p.bytes, p.group_size}];
      c.error = (c.twin_s - c.real_mean_s) / c.real_mean_s;
      out.push_back(c);
    }
  }
  return out;
}

void add_network_fits(const std::vector<NetworkFit>& fits, cluster::ClusterProfile* profile) {
  for (const NetworkFit& f : fits)
    profile->collectives[std::string(models::collective_op_name(f.op))].fit = f.segments;
}

}  // namespace clustertwin::calibrators
