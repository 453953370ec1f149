#include "sim/flexmarl/flexmarl_twin.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "sim/flexmarl/flexmarl_model.h"

namespace sg = simgrid::s4u;

namespace clustertwin::sim::flexmarl {
namespace {

using models::flexmarl::Framework;

StatusOr<std::string> run_in_child(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile,
                                   Framework framework, const models::flexmarl::Deployment& deployment) {
  TwinEngine twin;
  sg::Engine& engine = twin.engine();
  auto platform = Platform::build(profile, deployment.devices);
  if (!platform.is_ok()) return platform.status();
  detail::FlexMarlRun run(setup, profile, **platform, framework, deployment);
  Status status = Status::ok();
  sg::Actor::create("orchestrator", (*platform)->cpu(0), [&] { status = run.run(); });
  engine.run();
  CT_RETURN_IF_ERROR(status);
  return detail::row_to_json(run.result(), true).dump();
}

}  // namespace

StatusOr<FlexMarlRow> run_flexmarl(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile,
                                   Framework framework) {
  CT_RETURN_IF_ERROR(validate(setup, profile));
  const auto wall_start = std::chrono::steady_clock::now();
  auto deployment =
      models::flexmarl::deploy(setup.workload, framework, flexmarl_devices(setup, profile), device_facts(profile),
                               models::flexmarl::engine_efficiency(setup.efficiency, framework));
  if (!deployment.is_ok()) return deployment.status();
  auto payload = run_isolated([&] { return run_in_child(setup, profile, framework, *deployment); });
  if (!payload.is_ok()) return payload.status();
  FlexMarlRow row = detail::row_from_json(nlohmann::json::parse(*payload));
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return row;
}

StatusOr<std::vector<FlexMarlRow>> run_flexmarl_frameworks(
    const FlexMarlSetup& setup, const cluster::ClusterProfile& profile, const std::vector<Framework>& frameworks,
    const std::function<void(const FlexMarlRow&, int, int)>& progress) {
  std::vector<FlexMarlRow> rows;
  for (Framework f : frameworks) {
    auto row = run_flexmarl(setup, profile, f);
    if (!row.is_ok()) return row.status();
    rows.push_back(std::move(*row));
    if (progress) progress(rows.back(), static_cast<int>(rows.size()), static_cast<int>(frameworks.size()));
  }
  const FlexMarlRow* sync = nullptr;
  for (const FlexMarlRow& r : rows) {
    if (r.framework == "sync") sync = &r;
  }
  if (sync != nullptr) {
    const double sync_step = sync->step_s, sync_util = sync->utilization;
    for (FlexMarlRow& r : rows) {
      r.speedup = sync_step / r.step_s;
      r.utilization_gain = sync_util > 0 ? r.utilization / sync_util : 0;
    }
  }
  return rows;
}

}  // namespace clustertwin::sim::flexmarl
