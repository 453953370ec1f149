#pragma once

// Test profiles and mixes for the job-mix tests.

#include <gtest/gtest.h>

#include <string>

#include "models/cluster/cluster_profile.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix::testing {

/// Per NIC, each direction: 100 Gb/s = 12.5 GB/s.
inline constexpr double kNicBandwidth = 12.5e9;

/// Two leaves of 4 nodes under one spine, one device and one 100 Gb/s NIC
/// per node, every latency 0 (so that closed forms hold exactly): a leaf's
/// uplink carries 4 x 12.5 GB/s / `oversubscription`.
///
///                 [ spine ]
///              /            |
///         [leaf 0]        [leaf 1]
///        n0 n1 n2 n3     n4 n5 n6 n7
inline cluster::ClusterProfile two_leaf_profile(double oversubscription) {
  const std::string yaml = R"(name: two-leaf
nodes: 8
devices_per_node: 1
device: {name: gpu, peak_flops: {bf16: 100TFLOPS}, memory: 80GB, memory_bandwidth: 2TB/s}
host_link: {bandwidth: 50GB/s}
host_memory_bandwidth: 200GB/s
nics: {per_node: 1, bandwidth: 100Gbps}
topology: {kind: fat_tree, levels: 2, nodes_per_leaf: 4, radix: 2, oversubscription: )" +
                           std::to_string(oversubscription) + "}\n";
  auto profile = cluster::parse_cluster_profile(yaml, "two-leaf.yaml");
  EXPECT_TRUE(profile.is_ok()) << profile.status().message();
  return *profile;
}

/// A mix of two identical data-parallel jobs of 4 workers: `compute`, then a
/// ring all-reduce of `bytes`; `placement` for both ("" for none).
inline std::string two_job_mix(const std::string& compute, const std::string& bytes, const std::string& placement) {
  std::string text = "profile: two-leaf\njobs:\n";
  for (const char* name : {"a", "b"}) {
    text += std::string("  - name: ") + name + "\n    workers: 4\n    data_parallel: {compute: " + compute +
            ", allreduce_bytes: " + bytes + "}\n";
  }
  if (!placement.empty()) text += "placement: " + placement + "\n";
  return text;
}

inline MixSpec parse_or_die(const std::string& text) {
  auto mix = parse_mix(text, "mix.yaml", "");
  EXPECT_TRUE(mix.is_ok()) << mix.status().message();
  return mix.is_ok() ? *mix : MixSpec{};
}

}  // namespace clustertwin::sim::mix::testing
