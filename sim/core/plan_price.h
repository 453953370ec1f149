// What is decided before a plan runs in the twin (plan_price.cpp): the
// seconds of its tasks, the symmetric mode and the fidelity. PlanRun
// (plan_run.h) takes the first and runs with the other two.
#pragma once

#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/sim_options.h"

namespace clustertwin::sim {

/// The step counts of `options`: at least one step measured after the
/// warm-up and before the drain. InvalidArgument names the count. (A
/// command checks them before anything slow, e.g. a calibration.)
Status check_steps(const SimOptions& options);

/// The nominal seconds of every task on every rank ([task][rank]; -1 for a
/// transfer moved over the network), after checking everything that can be
/// checked before a simulation starts: the step counts of `options`, the
/// worker count against `profile`, the plan against the world, and each
/// collective's algorithm against its group. InvalidArgument names the
/// option, the plan or the task.
StatusOr<std::vector<std::vector<double>>> price_plan(const models::Plan& plan, const cluster::ClusterProfile& profile,
                                                      const SimOptions& options);

/// Whether every worker of a node provably does what the node's first does
/// (SimOptions::symmetric): then only the first is simulated.
bool symmetric_world(const models::Plan& plan, const cluster::ClusterProfile& profile, const SimOptions& options,
                     const std::vector<std::vector<double>>& seconds);

/// The fidelity a run uses: options.fidelity, or by worker count when automatic.
Fidelity resolve_fidelity(const SimOptions& options);

}  // namespace clustertwin::sim
