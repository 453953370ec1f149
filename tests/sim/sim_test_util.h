#pragma once

#include "models/cluster/cluster_profile.h"

namespace clustertwin::sim::testing {

/// n nodes of one device each on a single switch: every route is
/// NIC up (nic_latency) + switch (switch_latency) + NIC down (nic_latency),
/// so alpha = 2 nic_latency + switch_latency and beta = nic_bandwidth.
inline cluster::ClusterProfile uniform_switch(int n, double nic_bandwidth, double nic_latency, double switch_latency) {
  cluster::ClusterProfile p;
  p.name = "uniform-switch";
  p.nodes = n;
  p.devices_per_node = 1;
  p.device.name = "test-device";
  p.device.peak_flops["bf16"] = 100e12;
  p.device.memory_bytes = 80e9;
  p.device.memory_bandwidth = 2e12;
  p.host_link = {25e9, 1e-6};
  p.host_memory_bandwidth = 100e9;
  p.intra_node.link = {100e9, 1e-6};
  p.nics.per_node = 1;
  p.nics.link = {nic_bandwidth, nic_latency};
  p.topology.kind = cluster::Topology::Kind::kSingleSwitch;
  p.topology.switch_link.latency = switch_latency;
  return p;
}

/// 8 nodes of 4 devices with 2 NICs each (devices share them), a three-level
/// fat tree of 2 nodes per leaf and radix 2, oversubscribed 2:1 then 3:1:
/// flows crossing leaves share a bottleneck.
inline cluster::ClusterProfile oversubscribed_fat_tree() {
  cluster::ClusterProfile p = uniform_switch(8, 25e9, 1e-6, 0);
  p.name = "fat-tree-3";
  p.devices_per_node = 4;
  p.nics.per_node = 2;
  p.topology.kind = cluster::Topology::Kind::kFatTree;
  p.topology.levels = 3;
  p.topology.nodes_per_leaf = 2;
  p.topology.radix = 2;
  p.topology.oversubscription = {2.0, 3.0};
  p.topology.switch_link.latency = 0.3e-6;
  return p;
}

}  // namespace clustertwin::sim::testing
