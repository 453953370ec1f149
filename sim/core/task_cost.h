#pragma once

#include <string>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"

namespace clustertwin::sim {

/// The nominal duration of a compute, lookup or host task on a device of
/// type `device` (before the device's slowdown), seconds:
///
///   with a cost key in the profile:  latency + requests x per_request + flops / flop_rate
///                                    + bytes / byte_rate
///   compute, otherwise (roofline):   max(flops / (peak[dtype] x compute_efficiency),
///                                        bytes / (memory_bandwidth x memory_efficiency))
///   lookup, otherwise:               bytes / (host_memory_bandwidth / devices_per_node)
///   host, otherwise:                 an error: host work has no roofline, give it a cost key
///
/// Copies are priced by their cost key when the profile has one (a DMA
/// engine of its own: no contention with other tasks) and otherwise move
/// their bytes over the host link in the simulated network (simulator.cpp).
/// Collectives likewise: with a cost key in the profile (a measured
/// collective, as a replay fits it) they take that time once every member
/// has arrived; otherwise they are flows on the modelled network.
///
/// InvalidArgument names the task and what is missing (an unknown dtype, no
/// host memory bandwidth in the profile, ...).
StatusOr<double> task_seconds(const models::Task& task, const cluster::DeviceType& device,
                              const cluster::ClusterProfile& profile);

}  // namespace clustertwin::sim
