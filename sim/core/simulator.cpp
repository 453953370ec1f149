#include "sim/core/simulator.h"

#include <chrono>
#include <cstdlib>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "common/parallel.h"
#include "sim/core/isolated.h"
#include "sim/core/plan_run.h"
#include "sim/core/platform.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;

StatusOr<std::string> run_in_child(const models::Plan& plan, const cluster::ClusterProfile& profile,
                                   const SimOptions& options, std::vector<std::vector<double>> seconds) {
  const auto wall_start = std::chrono::steady_clock::now();
  TwinEngine twin(options.workers <= kStackGuardMaxWorkers);
  sg::Engine& engine = twin.engine();
  auto platform = Platform::build(profile, options.workers,
                                  options.stored_routes ? Platform::Routes::kStored : Platform::Routes::kComputed);
  if (!platform.is_ok()) return platform.status();
  (*platform)->set_group_merge_min_nodes(options.group_merge_min_nodes);
  const Fidelity fidelity = resolve_fidelity(options);
  const int stride = symmetric_world(plan, profile, options, seconds) ? profile.devices_per_node : 1;
  PlanRun run(plan, **platform, options, fidelity, std::move(seconds), stride);
  run.start();
  engine.run();
  CT_RETURN_IF_ERROR(run.check_complete());
  SimResult result = run.result(profile);
  if (!options.trace_out.empty()) {
    CT_RETURN_IF_ERROR(write_run_trace(plan, profile, options, result, std::move(run.events()), options.trace_out));
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return std::to_string(result.wall_s) + "\n" + sim_result_to_json(result);
}

}  // namespace

StatusOr<SimResult> simulate_plan(const models::Plan& plan, const cluster::ClusterProfile& profile,
                                  const SimOptions& options) {
  auto seconds = price_plan(plan, profile, options);
  if (!seconds.is_ok()) return seconds.status();
  auto payload = run_isolated(
      [&]() -> StatusOr<std::string> { return run_in_child(plan, profile, options, std::move(*seconds)); });
  if (!payload.is_ok()) return payload.status();
  const size_t newline = payload->find('\n');
  auto result = sim_result_from_json(payload->substr(newline + 1));
  if (!result.is_ok()) return result.status();
  result->wall_s = std::atof(payload->substr(0, newline).c_str());
  return result;
}

std::vector<StatusOr<SimResult>> simulate_many(const std::vector<SimJob>& jobs, int parallel) {
  std::vector<StatusOr<SimResult>> results(jobs.size(), Status::internal("not run"));
  parallel_for(jobs.size(), parallel,
               [&](size_t i) { results[i] = simulate_plan(*jobs[i].plan, *jobs[i].profile, jobs[i].options); });
  return results;
}

}  // namespace clustertwin::sim
