#pragma once

// Replaying a recorded real run in the twin: read the plan the run executed
// from its trace, fit each cost key's duration from the trace's own events,
// run the same plan in SimGrid on the same worker count, and compare step
// times. The first piece of the Calibrators issue's `validate`: a replay
// error, not yet a what-if (the costs come from the run it predicts).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "traces/event.h"

namespace clustertwin::calibrators {

/// A real run as its trace records it (`clustertwin run nestpipe --trace`):
/// the events, and from the metadata's config the plan that ran, how many
/// runner steps it ran and how many of those were pipeline prologue.
struct RecordedRun {
  std::string path;
  traces::Metadata metadata;
  std::vector<traces::Event> events;
  models::Plan plan;
  int runner_steps = 0;
  int prologue_steps = 0;
  /// Per rank, each step's span (start, end) in seconds where the trace says
  /// it (trace derive-plan's config.step_spans_us: profiler step markers),
  /// else empty.
  std::vector<std::vector<std::pair<double, double>>> step_spans;
};

/// InvalidArgument naming the file and the missing or bad field when the
/// trace does not carry a plan (config.plan), runner_steps or a world size,
/// or when its events name tasks the plan lacks.
StatusOr<RecordedRun> read_recorded_run(const std::string& path);

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
  /// (calibrators/stats.h) gives the slope and the line passes through the
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
};

/// The samples of the runner steps in [first_step, last_step] (inclusive).
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

/// A recorded run and the runner steps of it that count.
struct MeasuredRun {
  const RecordedRun* run = nullptr;
  int first_step = 0, last_step = 0;
};

/// On a profile whose nodes' ranks share cores (node_cores > 0) a key's cost
/// is core-seconds, not the time a task took, which includes its wait for a
/// core. Starting from `profile`'s costs, scales each cost key's cost by
/// real / twin until the twin, running each run's plan on its own worker
/// count and the profile's cores, gives every key the mean time (ready to
/// end) the runs recorded: an inverse fit by simulation, a few rounds, each
/// distinct (variant, worker count) simulated once per round. Keys the
/// profile does not price are left alone.
StatusOr<cluster::ClusterProfile> fit_shared_cores(const std::vector<MeasuredRun>& runs,
                                                   cluster::ClusterProfile profile);

/// The run's step time as the twin measures its own (sim/core/metrics.h):
/// (end of step last - end of step first - 1) / (last - first + 1), a step
/// ending with its last event on any rank. A run with step spans (a profiler
/// trace's markers) is measured by them instead, on its slowest rank, from
/// the start of step first (which may then be 0) to the end of step last:
/// the loop's pace, which the events' ends miss where the host bounds the
/// step or the device drains a backlog over the measured steps.
StatusOr<double> recorded_step_time(const RecordedRun& run, int first_step, int last_step);

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
