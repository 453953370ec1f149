#pragma once

// Replaying a recorded real run in the twin: read the plan the run executed
// from its trace, fit each cost key's duration from the trace's own events,
// run the same plan in SimGrid on the same worker count, and compare step
// times. The first piece of the Calibrators issue's `validate`: a replay
// error, not yet a what-if (the costs come from the run it predicts).
//
// The pieces live by concept: calibrators/recorded_run.h (reading the run
// and its step time), calibrators/task_fit.h (the samples and per-key fits),
// calibrators/shared_core_fit.h (the fit on shared cores); this header
// includes them all, and holds the replay itself.

#include <string>
#include <vector>

#include "calibrators/recorded_run.h"
#include "calibrators/shared_core_fit.h"
#include "calibrators/task_fit.h"
#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace clustertwin::calibrators {

/// One cost key's time per task in the real run (mean of its samples, ready
/// to end) and in the twin (mean of its tasks' durations).
struct KeyError {
  std::string cost_key;
  int64_t samples = 0;
  double real_s = 0;
  double twin_s = 0;
  double error = 0;  // (twin - real) / real
  /// CPU time the recording thread spent per task (the events' cpu_us) over
  /// the task's own time (start to end); -1 when the run recorded none. On
  /// shared cores it says how much of a key is work and how much waiting (a
  /// Gloo collective's calling thread waits: the copies run on Gloo's threads).
  double real_cpu_share = -1;
};

/// The replay of one run.
struct ReplayResult {
  std::string system, variant;
  /// Where the costs came from: "replay" (fitted on the run itself), "runs"
  /// (fitted on costs_from) or "profile" (the profile's own cost table).
  std::string costs = "replay";
  std::vector<std::string> costs_from;  // the traces the costs came from ("runs")
  int workers = 0;
  int first_step = 0, last_step = 0;  // measured runner steps
  double real_step_s = 0;
  double twin_step_s = 0;
  double step_error = 0;     // (twin - real) / real
  std::vector<KeyFit> fits;  // the costs used ("profile": none)
  std::vector<KeyError> per_key;
};

/// Reads, fits, simulates on `base` (the recorded world size) and compares.
/// Measures the middle of the run: `warmup` runner steps after the prologue
/// and `drain` before the end are left out on both sides. The costs:
///   - with `costs_paths`, fitted on those other recorded runs, pooled (other
///     variants, worker counts, seeds or repetitions): a prediction;
///   - else, when `base` prices every cost key of the plan (a calibrated
///     profile), the profile's: a prediction;
///   - else fitted on the run itself: a replay.
StatusOr<ReplayResult> replay(const std::string& trace_path, const std::vector<std::string>& costs_paths,
                              const cluster::ClusterProfile& base, int warmup, int drain);

std::string replay_json(const ReplayResult& result);

}  // namespace clustertwin::calibrators
