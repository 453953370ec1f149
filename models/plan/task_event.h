#pragma once

#include "models/plan/plan.h"
#include "traces/event.h"

namespace clustertwin::models {

/// The trace category of a task kind: compute, comm (collectives), copy, lookup, host.
traces::Category category_of(TaskKind kind);

/// The trace event of one run of `task` on `rank`'s `stream` in `step`,
/// from `start_us` to `end_us`: its category, and in args the task id, cost
/// key, step, micro-batch, bytes, FLOPs and collective, with `group_size`
/// (omitted when 0) and `peer` (omitted when negative). Both executors trace
/// tasks through this, so real and simulated traces carry the same fields.
traces::Event task_event(const Task& task, int64_t rank, int stream, int step, double start_us, double end_us,
                         int64_t group_size, int64_t peer = -1);

}  // namespace clustertwin::models
