#include "sim/flexmarl/flexmarl_setup.h"

#include <algorithm>

#include "common/text.h"
#include "models/cluster/device_profile.h"

namespace clustertwin::sim::flexmarl {

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
  for (double v : {e.decode, e.sync_decode, e.prefill}) {
    if (!(v > 0 && v <= 1)) {
      return Status::invalid_argument("engine efficiency " + format_number("%g", v) + " must be in (0, 1]");
    }
  }
  return Status::ok();
}

}  // namespace clustertwin::sim::flexmarl
