#pragma once

// Fitting the network from a real collective benchmark (`clustertwin run
// collectives --trace`): per collective and message-size range, a step
// latency and a bus bandwidth (cluster::CollectiveSegment), chosen as SimGrid's
// SMPI model chooses its factors per size, with the residual at every
// measured size.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "traces/event.h"

namespace clustertwin::calibrators {

/// One timed iteration of one collective at one size: from the last
/// member's start to the last member's end, what the twin's benchmark
/// measures (sim/core/collective_bench.h).
struct CollectiveSample {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  int group_size = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

/// The samples of a benchmark trace (metadata.system "collectives"): its
/// events grouped by (collective, bytes, step). InvalidArgument naming
/// `path` and the event when a comm event lacks collective, bytes, step or
/// group_size, or names an unknown collective.
StatusOr<std::vector<CollectiveSample>> collective_samples(const traces::Trace& trace, const std::string& path);

/// One measured size of one collective and the fit there.
struct SizePoint {
  int64_t bytes = 0;
  int group_size = 0;
  int samples = 0;
  double mean_s = 0;  // what the fit aims at
  double median_s = 0;
  double spread_s = 0;  // interquartile range
  double fitted_s = 0;
  double residual = 0;  // (fitted - mean) / mean
};

struct NetworkFit {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  std::vector<cluster::CollectiveSegment> segments;
  std::vector<SizePoint> points;
  double max_abs_residual = 0;
};

struct NetworkFitOptions {
  int max_segments = 4;
  /// The fewest segments whose largest residual is at most this; else the
  /// best of max_segments.
  double tolerance = 0.03;
};

/// The bus bandwidth given to a segment whose time does not grow with size
/// (fitted as pure latency): bytes/s, in effect unbounded.
inline constexpr double kLatencyOnlyBusBandwidth = 1e18;

/// The measured points of every collective of `samples`: per (size, group
/// size), the sample count, mean, median and IQR (fitted_s and residual 0),
/// sorted by size, then group size.
std::map<models::CollectiveOp, std::vector<SizePoint>> size_points(const std::vector<CollectiveSample>& samples);

/// Fits every collective of `samples` on the mean time per (size, group
/// size): the mean, not the median, because on a shared machine an
/// operation's time is bimodal (on time, or late by a scheduler tick) and a
/// step pays the mean; the median flips between the modes from one
/// recording to the next. Each segment minimises the squared relative error of
/// cluster::latency_steps x step_latency + bytes x cluster::bus_factor / bus_bandwidth over
/// its sizes, both terms non-negative; the segmentation minimises the
/// largest residual (dynamic programming over the sizes). A segment may hold
/// a single size: the largest messages can grow faster than their bytes (a
/// 4-rank all-gather on 2 cores: 18.3, 49.7 and 124.1 ms at 16, 32 and 64
/// MiB), which no line with a non-negative latency fits over two sizes.
std::vector<NetworkFit> fit_network(const std::vector<CollectiveSample>& samples, const NetworkFitOptions& options);

/// One benchmarked size against the twin's benchmark of it.
struct CollectiveCheck {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  int64_t bytes = 0;
  int group_size = 0;
  int samples = 0;
  double real_mean_s = 0;
  double real_median_s = 0;
  double real_spread_s = 0;  // interquartile range
  double twin_s = 0;
  double error = 0;  // (twin - real mean) / real mean
};

/// Runs the twin's collective benchmark (sim::bench_collective) on
/// `profile` for every collective, size and group size of the benchmark
/// traces at `paths` (pooled: repetitions, or size ranges recorded apart),
/// and compares it with their mean per size.
StatusOr<std::vector<CollectiveCheck>> check_collectives(const std::vector<std::string>& paths,
                                                         const cluster::ClusterProfile& profile);

/// `profile` with each fit as its collective's `fit` (efficiency and
/// congestion kept; they do not apply to a fitted collective).
void add_network_fits(const std::vector<NetworkFit>& fits, cluster::ClusterProfile* profile);

}  // namespace clustertwin::calibrators
