#pragma once

#include <functional>
#include <vector>

#include "models/plan/plan.h"
#include "sim/core/simulator.h"
#include "traces/event.h"

namespace clustertwin::sim {

/// Fills the per-step metrics of `result` (step time, compute, comm, exposed
/// communication, streams, tasks, MFU) from the events of a run.
///
/// `result->steps`, `warmup_steps`, `drain_steps`, `workers` and `step_end_s`
/// must be set. The measured window runs from the end of the last warm-up
/// step to the end of the last measured step (before the drain steps);
/// intervals are clipped to it. `peak_flops(event)` is the
/// peak FLOP/s of the device and dtype an event ran with.
///
/// Per-rank figures are averaged over the ranks that appear in `events` (all
/// workers, or one per node in symmetric mode). `breakdown` lists the layers
/// of SimResult::breakdown.
void compute_metrics(const models::Plan& plan, const std::vector<traces::Event>& events,
                     const std::function<double(const traces::Event&)>& peak_flops,
                     const std::vector<BreakdownLayer>& breakdown, SimResult* result);

}  // namespace clustertwin::sim
