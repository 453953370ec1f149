#pragma once

// What a FlexMARL twin run is given (FlexMarlSetup), its checks, and the
// profile's device as the cost formulas see it: read by the twin's entry
// (flexmarl_twin.h) and by its model (flexmarl_model.h).

#include <cstdint>
#include <string>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/flexmarl/frameworks.h"
#include "models/flexmarl/workload.h"

namespace clustertwin::sim::flexmarl {

struct FlexMarlSetup {
  models::flexmarl::Workload workload = models::flexmarl::ma_workload();
  /// Devices the run uses: 0 gives each agent a node of the profile
  /// (assumption: the paper does not say how many of its 768 NPUs each
  /// workload used), at most the whole profile.
  int devices = 0;
  double gap_threshold = 5;  // the paper's load-gap trigger, requests
  int steps = 4;             // simulated steps; the first is warm-up
  uint64_t seed = 0;
  models::flexmarl::EngineEfficiency efficiency;
};

/// The device count `setup` runs on for `profile` (resolving devices = 0).
int flexmarl_devices(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile);
/// InvalidArgument naming the field and value: the workload's checks, the
/// gap threshold, steps, the device count against the profile.
Status validate(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile);
/// The profile's device as the cost formulas see it.
models::flexmarl::DeviceFacts device_facts(const cluster::ClusterProfile& profile);
/// The engines' measured decode efficiency (EngineEfficiency::decode): the
/// device profile `name_or_path`'s decode_bandwidth_share; `*provenance`
/// (optional) its provenance line. InvalidArgument naming the profile when
/// it measured no decode.
StatusOr<double> engine_decode_efficiency(const std::string& name_or_path, std::string* provenance = nullptr);
/// The device profile the FlexMARL twin's engines are measured on by default.
inline constexpr const char* kDefaultDeviceProfile = "h200";

}  // namespace clustertwin::sim::flexmarl
