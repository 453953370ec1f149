#pragma once

// A recorded real run as the fits and the replay read it: its trace's events,
// the plan it ran (from the metadata's config), its runner steps, and the
// step time it took.

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
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

/// The run's step time as the twin measures its own (sim/core/metrics.h):
/// (end of step last - end of step first - 1) / (last - first + 1), a step
/// ending with its last event on any rank. A run with step spans (a profiler
/// trace's markers) is measured by them instead, on its slowest rank, from
/// the start of step first (which may then be 0) to the end of step last:
/// the loop's pace, which the events' ends miss where the host bounds the
/// step or the device drains a backlog over the measured steps.
StatusOr<double> recorded_step_time(const RecordedRun& run, int first_step, int last_step);

}  // namespace clustertwin::calibrators
