#pragma once

// `clustertwin calibrate`: fit a cluster profile to recorded traces. A
// collective benchmark's trace (metadata.system "collectives") fits the
// network (network_fit.h); a system's run (`clustertwin run SYSTEM --trace`)
// fits its cost keys (replay.h's fit_keys, pooled over every run given, of
// any worker count). The result is the base profile with those fits, written
// as YAML that the twin reads.

#include <string>
#include <vector>

#include "calibrators/network_fit.h"
#include "calibrators/replay.h"
#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace clustertwin::calibrators {

/// kAuto: the runs' own where the base's ranks share cores, has no step
/// wait and the runs' collectives record their CPU time, else none
/// (add_run_step_waits_by_default); not with collectives_from_network.
enum class StepWaitSource { kAuto, kNone, kRuns, kBenchmarks };

struct CalibrateOptions {
  std::string name;  // the profile's name ("" keeps the base's)
  int warmup = 3;    // runner steps after a run's prologue left out of the fit
  int drain = 2;     // runner steps at a run's end left out
  NetworkFitOptions network;
  /// Leave a run's collectives to the profile's network (the base's or the
  /// benchmarks' collectives.OP.fit, else its links) instead of fitting their
  /// cost keys: for a what-if at another scale, where a small trace's
  /// collective times (its ranks' skew included) do not extrapolate.
  bool collectives_from_network = false;
  /// On a base whose ranks share cores (node_cores): measure a collective's
  /// wait per latency step (calibrators/step_wait.h), write it as the
  /// profile's collectives.OP.step_wait, and fit the runs' collective keys
  /// without it: from the runs' own collectives (their time off the CPU), or
  /// from the collective benchmarks given, at each of their rank counts.
  StepWaitSource step_waits = StepWaitSource::kAuto;
};

struct Calibration {
  cluster::ClusterProfile profile;
  std::string base;                       // the base profile's name
  std::vector<std::string> bench_traces;  // collective benchmarks
  std::vector<std::string> run_traces;    // system runs
  std::vector<NetworkFit> network;
  std::vector<KeyFit> keys;
  /// On a base with a GPU node's host: the launches the profiler traces link to their kernels and copies
  /// (imported runs' host_dur_us), whose median host time becomes the profile's host.launch; 0: none.
  int64_t launches = 0;
};

/// Reads every trace, fits, and returns `base` with the fits. InvalidArgument
/// naming the file for a trace that is neither a benchmark nor a run with
/// its plan, or a run too short to leave a measured step.
StatusOr<Calibration> calibrate(const std::vector<std::string>& paths, const cluster::ClusterProfile& base,
                                const CalibrateOptions& options);

/// The profile as YAML, with a header naming the traces it was fitted on.
StatusOr<std::string> calibration_yaml(const Calibration& calibration);

/// The fit quality as a table: per cost key and per collective size.
std::string calibration_report(const Calibration& calibration);

/// The same as JSON: {"profile", "traces", "cost_keys": [...], "collectives": [...]}.
std::string calibration_json(const Calibration& calibration);

}  // namespace clustertwin::calibrators
