#pragma once

// Fitting each cost key's duration from a recorded run's tasks: the samples
// (each task's time from ready to end, and its size), the per-key line
// through them, and a profile that prices each key by its fit.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibrators/recorded_run.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"

namespace clustertwin::calibrators {

/// One cost key's fit, from each task's time from ready (its dependencies
/// and the task before it on its stream done) to end. That is what a task
/// adds to the critical path, including the wait for a core and a thread's
/// wake-up, which on an oversubscribed machine is half the step. A
/// collective counts once per run, at the mean over its members: they are
/// ready at different times, the twin's are not, so the mean wait for the
/// slowest member belongs to the collective.
struct KeyFit {
  std::string cost_key;
  int64_t samples = 0;
  double mean_s = 0;
  double median_s = 0;
  double spread_s = 0;   // interquartile range
  double mean_size = 0;  // mean FLOPs (compute), bus bytes (collectives) or bytes (the rest) of the samples' tasks
  bool size_is_flops = false;
  bool collective = false;  // latency_s is per latency step, seconds_per_unit per bus byte
  /// The cost: latency + size x seconds_per_unit. When the samples' sizes
  /// differ (several variants or scales pooled), a robust line
  /// (common/statistics.h) gives the slope and the line passes through the
  /// mean (a step's mean is the sum of its tasks' means); else all of the
  /// mean time per unit of size (a fixed time for a key without a size).
  double latency_s = 0;
  double seconds_per_unit = 0;
  /// The fit's quality: the largest |line / mean - 1| over the distinct
  /// sizes of the samples (0 for one size: the line passes through its mean).
  double max_abs_residual = 0;
};

/// One task run as a fit sees it: its cost key, its time from ready to end,
/// and its size. A collective's size is its bus bytes (bytes x
/// cluster::bus_factor(op, n)) and `steps` its latency steps (cluster::latency_steps(op, n)),
/// so that its cost scales to other group sizes as a benchmarked network does.
struct TaskSample {
  std::string cost_key;
  double seconds = 0;
  double size = 0;
  bool size_is_flops = false;
  double steps = 0;                             // > 0 for collectives
  std::optional<models::CollectiveOp> op = {};  // collectives
  int world = 0;                                // the run's world size
  double wait_s = 0;  // taken out of `seconds`: the collective's wait on shared cores (step_wait.h)
  /// CPU time the recording thread spent in the task (a collective: the mean
  /// over its members), where the trace records it (cpu_us); else unset.
  std::optional<double> cpu_s = {};
  /// A collective: its time once its last member was ready (the mean of the members' ends less the latest
  /// ready time); the rest of `seconds` is the members' wait for each other, which the twin simulates.
  std::optional<double> met_s = {};
};

/// The samples of the runner steps in [first_step, last_step] (inclusive),
/// stalled steps (stalled_steps) left out.
/// A send and the recv it meets (same step, pair and tag) are one sample of
/// the send's task: from when the later of the two was ready to the mean of
/// their ends (a recv posted early waits for its send; the twin does that
/// waiting itself).
std::vector<TaskSample> task_samples(const RecordedRun& run, int first_step, int last_step);

/// Fits every cost key of `samples` (see KeyFit).
std::vector<KeyFit> fit_keys(const std::vector<TaskSample>& samples);

/// fit_keys of task_samples.
std::vector<KeyFit> fit_key_durations(const RecordedRun& run, int first_step, int last_step);

/// `base` with each fit as the key's cost (collectives included: the twin
/// prices a collective by its cost key when the profile has one): latency,
/// and FLOP rate (compute) or byte rate (the rest), so that a plan whose
/// tasks of that key are bigger or smaller (another variant's micro-batches)
/// scales.
cluster::ClusterProfile profile_with_fits(const cluster::ClusterProfile& base, const std::vector<KeyFit>& fits);

}  // namespace clustertwin::calibrators
