// Before a plan runs: the nominal seconds of its tasks on every rank
// (price_plan, which also checks all that can be checked up front), whether
// one worker per node may stand for its node (symmetric_world), and the
// fidelity (resolve_fidelity).
#include "sim/core/plan_price.h"

#include <algorithm>
#include <string>

#include "common/check.h"
#include "common/text.h"
#include "models/plan/plan_validator.h"
#include "sim/core/collective_schedule.h"
#include "sim/core/task_cost.h"

namespace clustertwin::sim {
namespace {

using models::Task;
using models::TaskKind;

}  // namespace

Status check_steps(const SimOptions& options) {
  if (options.steps < 1)
    return Status::invalid_argument("steps " + std::to_string(options.steps) + ": must be at least 1");
  if (options.warmup_steps < 0 || options.warmup_steps >= options.steps) {
    return Status::invalid_argument("warmup_steps " + std::to_string(options.warmup_steps) + ": must be in [0, steps " +
                                    std::to_string(options.steps) + ")");
  }
  if (options.drain_steps < 0 || options.warmup_steps + options.drain_steps >= options.steps) {
    return Status::invalid_argument("drain_steps " + std::to_string(options.drain_steps) +
                                    ": warm-up plus drain steps must leave at least one of the " +
                                    std::to_string(options.steps) + " steps to measure");
  }
  return Status::ok();
}

namespace {

// The simulation's size, bounded before anything is priced: the plan's tasks, and the task runs of every
// step on every worker (the twin's memory and time grow with both).
Status check_plan_size(const models::Plan& plan, const SimOptions& options, const std::string& name) {
  constexpr double kMostTasks = 1e6;
  constexpr double kMostTaskRuns = 1e9;
  const double tasks = static_cast<double>(plan.tasks.size());
  if (tasks > kMostTasks) {
    return Status::invalid_argument(name + ": " + format_number("%.0f", tasks) + " tasks, more than the limit of " +
                                    format_number("%.0f", kMostTasks) + " a plan may hold");
  }
  const double runs = tasks * options.steps * options.workers;
  if (runs > kMostTaskRuns) {
    return Status::invalid_argument(name + ": " + format_number("%.3g", runs) + " task runs (" +
                                    format_number("%.0f", tasks) + " tasks x " + std::to_string(options.steps) +
                                    " steps x " + std::to_string(options.workers) +
                                    " workers), more than the limit of " + format_number("%.0e", kMostTaskRuns));
  }
  return Status::ok();
}

// A collective's seconds (on every rank): by its cost key when the profile
// has one (a measured collective, replayed once its members meet), else by
// the op's fitted time (a benchmarked network), else moved as flows over the
// network (-1). Its algorithm is checked against its group now, not inside
// the run.
Status price_collective(const Task& t, const cluster::ClusterProfile& profile, const SimOptions& options,
                        const std::function<int(int)>& node_of, const std::string& name, std::vector<double>& seconds) {
  const bool p2p = t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv;
  const std::vector<int> members =
      p2p ? std::vector<int>{}
          : models::group_members(t.collective->group, 0, options.workers, profile.devices_per_node);
  auto cost = t.cost_key.empty() ? profile.costs.end() : profile.costs.find(t.cost_key);
  const cluster::CollectiveFactor* fitted = profile.fitted_collective(t.collective->op);
  double s = -1.0;
  if (cost != profile.costs.end()) {
    s = cost->second.collective_seconds(t.collective->op, static_cast<double>(t.bytes),
                                        p2p ? 2 : static_cast<int>(members.size()), static_cast<double>(t.requests));
  } else if (!p2p && fitted != nullptr) {
    s = fitted->fitted_seconds(t.collective->op, static_cast<double>(t.bytes), static_cast<int>(members.size()));
  }
  std::fill(seconds.begin(), seconds.end(), s);
  if (p2p) return Status::ok();
  auto schedule = build_schedule(*t.collective, t.bytes, members, node_of, t.name);
  if (!schedule.is_ok()) return schedule.status().with_context(name);
  return Status::ok();
}

}  // namespace

StatusOr<std::vector<std::vector<double>>> price_plan(const models::Plan& plan, const cluster::ClusterProfile& profile,
                                                      const SimOptions& options) {
  CT_RETURN_IF_ERROR(check_steps(options));
  CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, options.workers));
  const std::string name = plan.system + "/" + plan.variant;
  CT_RETURN_IF_ERROR(check_plan_size(plan, options, name));
  CT_RETURN_IF_ERROR(models::validate_plan(plan, name));
  CT_RETURN_IF_ERROR(models::validate_plan_for_world(plan, name, options.workers, profile.devices_per_node));
  std::vector<std::vector<double>> seconds(plan.tasks.size(), std::vector<double>(options.workers, 0.0));
  const std::function<int(int)> node_of = [&](int r) {
    return profile.simgrid_platform.empty() ? r / std::min(options.workers, profile.devices_per_node) : r;
  };
  for (const Task& t : plan.tasks) {
    if (t.kind == TaskKind::kCollective) {
      CT_RETURN_IF_ERROR(price_collective(t, profile, options, node_of, name, seconds[t.id]));
      continue;
    }
    if (t.kind == TaskKind::kCopy) {
      // Priced by its cost key when the profile has one, else moved over the host link (-1).
      auto cost = t.cost_key.empty() ? profile.costs.end() : profile.costs.find(t.cost_key);
      const double s = cost == profile.costs.end() ? -1.0
                                                   : cost->second.seconds(t.flops, static_cast<double>(t.bytes),
                                                                          static_cast<double>(t.requests));
      std::fill(seconds[t.id].begin(), seconds[t.id].end(), s);
      continue;
    }
    for (int rank = 0; rank < options.workers; ++rank) {
      auto s = task_seconds(t, profile.device_type_of(rank), profile);
      if (!s.is_ok()) return s.status().with_context(name);
      seconds[t.id][rank] = *s;
    }
  }
  return seconds;
}

bool symmetric_world(const models::Plan& plan, const cluster::ClusterProfile& profile, const SimOptions& options,
                     const std::vector<std::vector<double>>& seconds) {
  const int per_node = profile.devices_per_node;
  if (!options.symmetric || per_node < 2 || options.workers <= per_node || options.workers % per_node != 0)
    return false;
  if (!profile.simgrid_platform.empty() || !profile.slowdown.empty() || !profile.node_device_type.empty()) return false;
  // The node's ranks share its cores (a node of CPU processes, or a GPU node's host): each one's load counts.
  if (profile.node_cores > 0 || profile.host.modelled()) return false;
  // A rank range of whole nodes: every device of a node runs the task or none does.
  auto whole_nodes = [&](const models::RankRange& r) {
    return r.begin % per_node == 0 && (r.end == -1 || r.end % per_node == 0);
  };
  for (const Task& t : plan.tasks) {
    if (!std::all_of(t.ranks.begin(), t.ranks.end(), whole_nodes)) return false;
    for (double s : seconds[t.id]) {
      if (s != seconds[t.id][0]) return false;
    }
    if (!t.collective) continue;
    const models::GroupSpec& g = t.collective->group;
    switch (g.kind) {
      case models::GroupSpec::Kind::kWorld:
      case models::GroupSpec::Kind::kNode:
        break;
      case models::GroupSpec::Kind::kBlock:
        // Blocks of whole nodes, or blocks that tile a node: the run adds the node's other blocks' traffic.
        if (g.size % per_node != 0 && per_node % g.size != 0) return false;
        break;
      case models::GroupSpec::Kind::kStride:
        // Members a multiple of a node apart (a node's first device is in a group of first devices), or a
        // stride that divides a node (its groups hold every node's devices alike): the run adds the groups of
        // the node's other devices to its traffic (run_network_collective). Within blocks of whole nodes
        // (span), the same holds block by block.
        if ((g.size % per_node != 0 && per_node % g.size != 0) || g.span % per_node != 0) return false;
        break;
    }
    // A send or receive a multiple of a node away: the node's first device talks to the peer node's first, and
    // the run adds the node's other devices' messages to its traffic (run_network_collective).
    if ((t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv) &&
        t.collective->peer_offset % per_node != 0)
      return false;
  }
  return true;
}

Fidelity resolve_fidelity(const SimOptions& options) {
  if (!options.auto_fidelity) return options.fidelity;
  return options.workers <= kStepFidelityMaxWorkers ? Fidelity::kStep : Fidelity::kFlow;
}

}  // namespace clustertwin::sim
