#pragma once

// Checks that a plan makes sense, and the graph algorithms that need a valid
// plan: topological order and critical path.
//
// One step's graph has an edge a -> b ("a finishes before b starts") for
// every same-step dependency of b on a, and for every pair of consecutive
// tasks a, b of one stream (b is the next task in plan order on a's stream):
//
//   compute:  fwd ---------> bwd -----------+         ---->  stream order
//              |              |              |           |    dep
//              v              v              v           v
//   comm:     a2a_fwd ----> a2a_bwd ----> grad_ar
//
// Stream order counts every task of the stream whatever its `ranks`, so the
// graph is the same on every rank. prev_step_deps link two steps and are not
// edges of one step's graph.

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"

namespace clustertwin::models {

/// Checks the structure of a plan, independent of the world size: at least
/// one stream, unique non-empty stream and task names, ids equal to
/// positions, valid stream indices, deps and prev_step_deps naming existing
/// tasks (a same-step dep never the task itself, no dep listed twice), finite
/// non-negative flops and non-negative bytes, rank ranges [begin, end) with
/// 0 <= begin < end or end -1, a collective descriptor exactly on collective
/// tasks (block and stride sizes >= 1, no size on world and node groups,
/// split_bytes non-negative and only on all-to-all, root >= 0), and no cycle
/// in the step's graph.
///
/// Returns InvalidArgument with one line that starts with `name`:
///   "plan.json: task 'bwd': dep 7 does not exist (the plan has 5 tasks)"
///   "plan.json: dependency cycle: 'a' -> 'b' -(stream order)-> 'a'"
Status validate_plan(const Plan& plan, const std::string& name);

/// Checks a plan that passed validate_plan against a world of `world_size`
/// ranks with `devices_per_node` ranks per node: rank ranges within the world,
/// block and stride sizes that divide the world, node groups that tile it,
/// every collective run by all members of each of its groups or by none,
/// split_bytes with one entry per group member summing to bytes, broadcast
/// roots within the group, send/recv peers within the group, and every send
/// matched by a recv at its peer (same tag, opposite offset) and vice versa.
///
/// Returns InvalidArgument with one line that starts with `name`:
///   "plan.json: task 'ar': collective joined by only part of its group: rank 3
///    is in the world group of rank 0 but does not run the task"
Status validate_plan_for_world(const Plan& plan, const std::string& name, int world_size, int devices_per_node);

/// The task ids of one step in an order that respects every edge of the
/// step's graph; among the tasks that are ready, the lowest id comes first,
/// so the order is deterministic. Requires a plan that passed validate_plan.
std::vector<int> topological_order(const Plan& plan);

/// The length of the longest path through one step's graph, where a path
/// costs the sum of `duration(task)` over its tasks (seconds): a lower bound
/// on the step time, whatever the platform. 0 for a plan without tasks.
/// Requires a plan that passed validate_plan.
double critical_path_seconds(const Plan& plan, const std::function<double(const Task&)>& duration);

}  // namespace clustertwin::models
