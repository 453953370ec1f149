#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/sim_options.h"
#include "sim/core/sim_result.h"

namespace clustertwin::sim {

/// Runs `plan` on `profile` with `options.workers` workers in SimGrid.
///
/// Each simulation runs in a child process (SimGrid allows one engine per
/// process), so callers can run many, in parallel if they like; the result
/// comes back through a pipe. InvalidArgument for a plan that does not fit
/// the world (see models/plan/plan_validator.h) or a task the profile cannot
/// price; Internal when the simulation fails.
StatusOr<SimResult> simulate_plan(const models::Plan& plan, const cluster::ClusterProfile& profile,
                                  const SimOptions& options);

/// One simulation of a sweep.
struct SimJob {
  const models::Plan* plan = nullptr;
  const cluster::ClusterProfile* profile = nullptr;
  SimOptions options;
};

/// Runs `jobs` with up to `parallel` simulations at a time (each in its own
/// child process); results come back in job order, the same as one by one.
std::vector<StatusOr<SimResult>> simulate_many(const std::vector<SimJob>& jobs, int parallel);

/// The result as one JSON object (deterministic: same inputs, same bytes).
std::string sim_result_to_json(const SimResult& result);
StatusOr<SimResult> sim_result_from_json(const std::string& text);

}  // namespace clustertwin::sim
