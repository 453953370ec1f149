#pragma once

// A recorded real run as the fits and the replay read it: its trace's events,
// the plan it ran (from the metadata's config), its runner steps, and the
// step time it took.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"
#include "traces/event.h"

namespace clustertwin::calibrators {

/// A system's recorded trace (`clustertwin run SYSTEM --trace`) with its
/// metadata's config parsed: what each system's own reader starts from.
struct SystemTrace {
  std::string path;
  traces::Metadata metadata;
  std::vector<traces::Event> events;
  nlohmann::json config;  // a JSON object
};

/// InvalidArgument naming the file and the field when the trace is another
/// system's (metadata.system is not `system`) or its config is not a JSON
/// object; the reader's errors otherwise.
StatusOr<SystemTrace> read_system_trace(const std::string& path, const std::string& system);

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
  std::vector<int64_t> step_span_ranks;  // the rank of each step_spans entry
};

/// InvalidArgument naming the file and the missing or bad field when the
/// trace does not carry a plan (config.plan), runner_steps or a world size,
/// or when its events name tasks the plan lacks.
StatusOr<RecordedRun> read_recorded_run(const std::string& path);

/// The run's step time as the twin measures its own (sim/core/metrics.h):
/// (end of step last - end of step first - 1) / (last - first + 1), a step
/// ending with its last event on any rank. A run with step spans (a profiler
/// trace's markers) is measured on its slowest rank by the slower of two
/// paces over the measured steps: the host's (the steps' spans, each from
/// its marker to the next step's) and the device's (from the last device
/// event's end of the step before the first to that of the last; from the
/// first span's start when there is no step before). Steady, the two are
/// one; in a profiler's window of a few steps they are not. Bound by the
/// host, the device may drain a backlog and run faster than the loop; bound
/// by the device with no synchronisation, the host runs steps ahead of it
/// (its queue carries across the markers) and its markers come faster than
/// the steps: a DLRM-like step whose host launches in 60 us what the device
/// runs in 300 measured 2x too long by the markers and the drain of the
/// window's last step (tests/plan/import/kineto_plan_test.cpp). Stalled
/// steps (stalled_steps, by the host's pace there) are left out.
StatusOr<double> recorded_step_time(const RecordedRun& run, int first_step, int last_step);

/// A step stalled when something outside the workload stopped it (the
/// operating system, a page-fault storm, the allocator growing; one H200
/// nestpipe run has one task at 85 ms against its median of 21): it took
/// more than kStallFactor times the median of the measured steps and lies
/// more than kStallMads median absolute deviations above it. The twin has no
/// such event, so a stalled step is left out of the measured step time and
/// its tasks out of the fits, and so is the step after it, which catches up
/// (the work queued behind the stall runs back to back: 42 ms against a
/// median of 46 there). Ranks time-sharing cores wait for them as part of
/// the workload, which the twin models (node_cores): their runs are
/// heavy-tailed (in 188 runs of 2-4 ranks on 2 cores, steps reach 3.4x the
/// median but at most 11 deviations above it), so the second bound keeps
/// their slow steps, while a steady GPU run's stall lies 27 above it.
inline constexpr double kStallFactor = 2.0;
inline constexpr double kStallMads = 20.0;

/// The runner steps of [first_step, last_step] that stalled (kStallFactor), and each one's next:
/// by each step's time (its end to the previous step's end; with step spans,
/// its span on the slowest rank) against their median. Empty when fewer
/// than 3 steps are measured (no median to speak of).
std::set<int> stalled_steps(const RecordedRun& run, int first_step, int last_step);

}  // namespace clustertwin::calibrators
