#include "sim/flexmarl/flexmarl_twin.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>

#include "common/text.h"
#include "models/cluster/device_profile.h"
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

models::flexmarl::DeviceFacts device_facts(const cluster::ClusterProfile& profile) {
  models::flexmarl::DeviceFacts d;
  auto it = profile.device.peak_flops.find("bf16");
  d.peak_flops = it != profile.device.peak_flops.end() ? it->second : profile.device.peak_flops.begin()->second;
  d.memory_bytes = profile.device.memory_bytes;
  d.memory_bandwidth = profile.device.memory_bandwidth;
  d.link_latency_s = profile.intra_node.link.latency;
  d.devices_per_node = profile.devices_per_node;
  return d;
}

StatusOr<double> engine_decode_efficiency(const std::string& name_or_path, std::string* provenance) {
  auto device = cluster::load_device_profile(name_or_path);
  if (!device.is_ok()) return device.status();
  if (!(device->decode_bandwidth_share > 0)) {
    return Status::invalid_argument("device_profile " + name_or_path +
                                    ": field 'decode_bandwidth_share' missing: its trace measured no decode token "
                                    "(give a decode efficiency instead)");
  }
  if (provenance != nullptr) *provenance = device->provenance_line();
  return device->decode_bandwidth_share;
}

int flexmarl_devices(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile) {
  if (setup.devices > 0) return setup.devices;
  return std::min(profile.devices(), static_cast<int>(setup.workload.agents.size()) * profile.devices_per_node);
}

Status validate(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile) {
  CT_RETURN_IF_ERROR(models::flexmarl::validate(setup.workload));
  if (!(setup.gap_threshold > 0)) {
    return Status::invalid_argument("load_gap " + format_number("%g", setup.gap_threshold) +
                                    ": the load-gap threshold must be > 0 (requests)");
  }
  if (setup.steps < 2) {
    return Status::invalid_argument("steps " + std::to_string(setup.steps) +
                                    ": must be >= 2 (the first step is warm-up)");
  }
  if (setup.devices < 0) return Status::invalid_argument("workers " + std::to_string(setup.devices) + ": must be >= 1");
  CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, flexmarl_devices(setup, profile)));
  if (profile.device.peak_flops.empty() || !(profile.device.memory_bytes > 0) ||
      !(profile.device.memory_bandwidth > 0)) {
    return Status::invalid_argument("profile '" + profile.name +
                                    "': the FlexMARL twin needs the device's peak_flops, memory and memory_bandwidth");
  }
  const models::flexmarl::EngineEfficiency& e = setup.efficiency;
  if (e.decode == 0) {
    return Status::invalid_argument(
        "decode efficiency unset: give --decode-efficiency or a --device-profile that measured decode");
  }
  for (double v : {e.decode, e.sync_decode, e.prefill, e.train}) {
    if (!(v > 0 && v <= 1)) {
      return Status::invalid_argument("engine efficiency " + format_number("%g", v) + " must be in (0, 1]");
    }
  }
  return Status::ok();
}

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
