// One test per class of bad profile, each asserting the whole message: the
// file, the field path, the bad value and what is allowed.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "models/cluster/cluster_profile.h"

namespace clustertwin::sim {
namespace {

// A small valid profile; each test breaks one thing in it.
constexpr char kTiny[] = R"(name: tiny
nodes: 4
devices_per_node: 2
device:
  name: gpu-a
  peak_flops: {bf16: 100TFLOPS}
  memory: 16GB
  memory_bandwidth: 1TB/s
host_link: {bandwidth: 16GB/s, latency: 5us}
host_memory_bandwidth: 100GB/s
intra_node: {kind: switch, bandwidth: 100GB/s, latency: 1us}
nics: {per_node: 2, bandwidth: 100Gbps, latency: 2us}
topology: {kind: fat_tree, levels: 2, nodes_per_leaf: 2, radix: 2}
)";

// kTiny with each `from` replaced by its `to` (`from` must be there), or with `to` appended when `from` is empty.
std::string tiny_with(std::initializer_list<std::pair<std::string, std::string>> edits) {
  std::string text = kTiny;
  for (const auto& [from, to] : edits) {
    if (from.empty()) {
      text += to;
      continue;
    }
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return text;
}

std::string tiny_with(const std::string& from, const std::string& to) {
  return tiny_with({{from, to}});
}

std::string error_of(const std::string& yaml) {
  StatusOr<cluster::ClusterProfile> profile = cluster::parse_cluster_profile(yaml, "tiny.yaml");
  if (profile.is_ok()) return "(parsed without error)";
  EXPECT_EQ(profile.status().code(), Status::Code::kInvalidArgument);
  return profile.status().message();
}

TEST(ProfileErrorTest, TheBaseProfileIsValid) {
  StatusOr<cluster::ClusterProfile> profile = cluster::parse_cluster_profile(kTiny, "tiny.yaml");
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_EQ(profile->devices(), 8);
  EXPECT_DOUBLE_EQ(profile->nics.link.bandwidth, 12.5e9);  // 100 Gb/s = 100e9 / 8 B/s
}

TEST(ProfileErrorTest, NegativeBandwidth) {
  EXPECT_EQ(error_of(tiny_with("bandwidth: 100Gbps", "bandwidth: -5")),
            "tiny.yaml: field 'nics.bandwidth': -5 must be > 0");
  EXPECT_EQ(error_of(tiny_with("bandwidth: 100Gbps", "bandwidth: -5GB/s")),
            "tiny.yaml: field 'nics.bandwidth': -5GB/s must be > 0");
}

TEST(ProfileErrorTest, NegativeLatency) {
  EXPECT_EQ(error_of(tiny_with("latency: 5us", "latency: -1us")),
            "tiny.yaml: field 'host_link.latency': -1us must be >= 0");
}

TEST(ProfileErrorTest, UnknownTopology) {
  EXPECT_EQ(error_of(tiny_with("kind: fat_tree", "kind: torus")),
            "tiny.yaml: field 'topology.kind': unknown topology 'torus' (allowed: single_switch, fat_tree, "
            "rail_leaf_spine, dragonfly)");
}

TEST(ProfileErrorTest, UnknownFieldNamesTheAllowedOnes) {
  EXPECT_EQ(error_of(tiny_with("{per_node: 2", "{per_nodes: 2")),
            "tiny.yaml: field 'nics.per_nodes': unknown field (allowed in 'nics': per_node, bandwidth, latency, "
            "rail_optimized)");
  EXPECT_EQ(
      error_of(tiny_with("", "colour: blue\n")),
      "tiny.yaml: field 'colour': unknown field (allowed: name, description, nodes, devices_per_node, node_cores, "
      "host, default_dtype, device, host_link, host_memory_bandwidth, intra_node, nics, topology, device_types, "
      "node_device_type, slowdown, costs, collectives)");
  // A field of another topology kind is unknown for this one.
  EXPECT_EQ(error_of(tiny_with("radix: 2}", "radix: 2, routers_per_group: 4}")),
            "tiny.yaml: field 'topology.routers_per_group': unknown field (allowed in 'topology': kind, levels, "
            "nodes_per_leaf, radix, oversubscription, switch_link)");
}

TEST(ProfileErrorTest, FieldGivenTwice) {
  EXPECT_EQ(error_of(tiny_with("", "nodes: 8\n")), "tiny.yaml: field 'nodes' is given twice");
}

TEST(ProfileErrorTest, MissingRequiredField) {
  EXPECT_EQ(error_of(tiny_with("host_memory_bandwidth: 100GB/s\n", "")),
            "tiny.yaml: field 'host_memory_bandwidth': required but missing");
}

TEST(ProfileErrorTest, BadUnit) {
  EXPECT_EQ(error_of(tiny_with("memory: 16GB", "memory: 16Gb")),
            "tiny.yaml: field 'device.memory': unknown unit 'Gb' in '16Gb' (size units: B with a prefix k, M, G, T, "
            "P or Ki, Mi, Gi, Ti, Pi; a plain number is bytes)");
  EXPECT_EQ(error_of(tiny_with("100TFLOPS", "100TB/s")),
            "tiny.yaml: field 'device.peak_flops.bf16': unknown unit 'TB/s' in '100TB/s' (FLOP-rate units: FLOPS, "
            "FLOP/s, OPS, OP/s with a prefix k, M, G, T, P, E; a plain number is FLOP/s)");
}

TEST(ProfileErrorTest, NotAWholeNumber) {
  EXPECT_EQ(error_of(tiny_with("nodes: 4", "nodes: 4.5")), "tiny.yaml: field 'nodes': '4.5' is not a whole number");
  EXPECT_EQ(error_of(tiny_with("nodes: 4", "nodes: 0")), "tiny.yaml: field 'nodes': 0 must be >= 1");
}

TEST(ProfileErrorTest, UnknownDataType) {
  EXPECT_EQ(error_of(tiny_with("bf16: 100TFLOPS", "bf17: 100TFLOPS")),
            "tiny.yaml: field 'device.peak_flops.bf17': unknown data type 'bf17' (allowed: fp32, tf32, bf16, fp16, "
            "fp8, int8)");
  EXPECT_EQ(error_of(tiny_with("", "default_dtype: fp32\n")),
            "tiny.yaml: field 'device.peak_flops': device type 'gpu-a' has no rate for default_dtype 'fp32'");
}

TEST(ProfileErrorTest, EfficiencyOutsideUnitInterval) {
  EXPECT_EQ(error_of(tiny_with("memory: 16GB", "memory: 16GB\n  compute_efficiency: 1.5")),
            "tiny.yaml: field 'device.compute_efficiency': 1.5 must be in [0.001, 1] (a share of a rate)");
}

TEST(ProfileErrorTest, SlowdownBelowOne) {
  EXPECT_EQ(error_of(tiny_with("", "slowdown: {3: 0.5}\n")), "tiny.yaml: field 'slowdown.3': 0.5 must be >= 1");
}

TEST(ProfileErrorTest, DeviceIndexOutOfRange) {
  // 4 nodes * 2 devices: ranks 0..7.
  EXPECT_EQ(error_of(tiny_with("", "slowdown: {8: 1.5}\n")),
            "tiny.yaml: field 'slowdown.8': device 8 is out of range (the profile has 8 devices: 0..7)");
  EXPECT_EQ(error_of(tiny_with("", "slowdown: {6-9: 1.5}\n")),
            "tiny.yaml: field 'slowdown.6-9': device 9 is out of range (the profile has 8 devices: 0..7)");
  EXPECT_EQ(error_of(tiny_with("", "slowdown: {0-3: 1.5, 2: 2}\n")),
            "tiny.yaml: field 'slowdown.2': device 2 is given twice");
  EXPECT_EQ(error_of(tiny_with("", "slowdown: {first: 1.5}\n")),
            "tiny.yaml: field 'slowdown.first': 'first' is not a device index or a range like 8-15");
}

TEST(ProfileErrorTest, NodeIndexOutOfRange) {
  EXPECT_EQ(error_of(tiny_with("", "node_device_type: {4: gpu-a}\n")),
            "tiny.yaml: field 'node_device_type.4': node 4 is out of range (the profile has 4 nodes: 0..3)");
}

TEST(ProfileErrorTest, UnknownDeviceType) {
  EXPECT_EQ(error_of(tiny_with("", "node_device_type: {1: gpu-b}\n")),
            "tiny.yaml: field 'node_device_type.1': unknown device type 'gpu-b' (known: gpu-a)");
}

TEST(ProfileErrorTest, FatTreeTooSmallForTheNodes) {
  // nodes_per_leaf 2 * radix 2 = 4 nodes at most.
  EXPECT_EQ(error_of(tiny_with("nodes: 4", "nodes: 5")),
            "tiny.yaml: field 'topology': a fat_tree of 2 levels with nodes_per_leaf 2 and radix 2 holds at most 4 "
            "nodes, fewer than nodes 5");
  // A dragonfly of 1 node per router, 2 routers per group, 1 global link each: (2 * 1 + 1) groups * 2 = 6 nodes.
  EXPECT_EQ(
      error_of(tiny_with({{"nodes: 4", "nodes: 7"},
                          {"{kind: fat_tree, levels: 2, nodes_per_leaf: 2, radix: 2}",
                           "{kind: dragonfly, nodes_per_leaf: 1, routers_per_group: 2, global_links_per_router: 1}"}})),
      "tiny.yaml: field 'topology': a dragonfly with nodes_per_leaf 1, routers_per_group 2 and "
      "global_links_per_router 1 holds at most 6 nodes, fewer than nodes 7");
}

TEST(ProfileErrorTest, InconsistentTopologyParameters) {
  EXPECT_EQ(error_of(tiny_with("radix: 2", "radix: 1")),
            "tiny.yaml: field 'topology.radix': 1 must be >= 2 when levels > 1");
  EXPECT_EQ(error_of(tiny_with("radix: 2}", "radix: 2, oversubscription: [1, 2]}")),
            "tiny.yaml: field 'topology.oversubscription': 2 values for 1 level above the leaves; give one number for "
            "all, or one per level");
  EXPECT_EQ(error_of(tiny_with("radix: 2}", "radix: 2, oversubscription: [0.5]}")),
            "tiny.yaml: field 'topology.oversubscription[0]': 0.5 must be >= 1");
  EXPECT_EQ(error_of(tiny_with({{"nodes: 4", "nodes: 2"}, {"levels: 2", "levels: 1"}})),
            "(parsed without error)");  // one leaf of 2 nodes; radix may stay, it is unused
  EXPECT_EQ(
      error_of(tiny_with(
          {{"nodes: 4", "nodes: 2"}, {"levels: 2", "levels: 1"}, {"radix: 2}", "radix: 2, oversubscription: 2}"}})),
      "tiny.yaml: field 'topology.oversubscription': there is no level above the leaves when levels is 1");
  EXPECT_EQ(error_of(tiny_with("kind: fat_tree", "kind: rail_leaf_spine")),
            "tiny.yaml: field 'nics.rail_optimized': must be true for topology 'rail_leaf_spine' (device d uses NIC d "
            "on rail d)");
  EXPECT_EQ(error_of(tiny_with("{per_node: 2", "{per_node: 1, rail_optimized: true")),
            "tiny.yaml: field 'nics.per_node': 1 must equal devices_per_node 2 when rail_optimized is true (device d "
            "uses NIC d)");
}

TEST(ProfileErrorTest, NotYaml) {
  const std::string message = error_of(tiny_with("", "costs: {a: [unclosed\n"));
  const std::string prefix = "tiny.yaml: not valid YAML: line 15, column ";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
  EXPECT_EQ(error_of("- a\n- b\n"),
            "tiny.yaml: a cluster profile is a mapping of fields (name, nodes, devices_per_node, device, ...), got a "
            "list");
  EXPECT_EQ(error_of(""),
            "tiny.yaml: a cluster profile is a mapping of fields (name, nodes, devices_per_node, device, ...), got "
            "nothing");
}

TEST(ProfileErrorTest, WrongShapeOfValue) {
  EXPECT_EQ(error_of(tiny_with("nodes: 4", "nodes: [4]")),
            "tiny.yaml: field 'nodes': expected a single value, got a list");
  EXPECT_EQ(error_of(tiny_with("host_memory_bandwidth: 100GB/s", "host_memory_bandwidth:")),
            "tiny.yaml: field 'host_memory_bandwidth': expected a single value, got nothing");
  EXPECT_EQ(error_of(tiny_with("", "costs: {lookup: 5us}\n")),
            "tiny.yaml: field 'costs.lookup': expected a mapping of fields, got the single value '5us'");
  EXPECT_EQ(error_of(tiny_with("", "costs: {lookup: {}}\n")),
            "tiny.yaml: field 'costs.lookup': give at least one of latency, per_request, flop_rate, byte_rate, "
            "step_latency, bus_rate, step_wait");
}

TEST(ProfileErrorTest, PerRequestCostsAndCollectiveFactors) {
  StatusOr<cluster::ClusterProfile> p =
      cluster::parse_cluster_profile(tiny_with("",
                                               "costs: {lookup: {per_request: 1.5ms, byte_rate: 1GB/s}}\n"
                                               "collectives: {alltoall: {efficiency: 0.25, congestion_peers: 290}}\n"),
                                     "tiny.yaml");
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  // 3 requests x 1.5 ms + 1e9 B / 1e9 B/s
  EXPECT_DOUBLE_EQ(p->costs.at("lookup").seconds(0, 1e9, 3), 1.0045);
  EXPECT_DOUBLE_EQ(p->collectives.at("alltoall").byte_factor(291), (1 + 290.0 / 290) / 0.25);
  EXPECT_DOUBLE_EQ(p->collectives.at("alltoall").byte_factor(1), 4.0);  // no peers, no congestion
  EXPECT_EQ(error_of(tiny_with("", "costs: {lookup: {per_request: -1ms}}\n")),
            "tiny.yaml: field 'costs.lookup.per_request': -1ms must be >= 0");
  EXPECT_EQ(error_of(tiny_with("", "costs: {a2a: {step_latency: -1us}}\n")),
            "tiny.yaml: field 'costs.a2a.step_latency': -1us must be >= 0");
  EXPECT_EQ(error_of(tiny_with("", "costs: {a2a: {bus_rate: fast}}\n")),
            "tiny.yaml: field 'costs.a2a.bus_rate': 'fast' is not a number (bandwidth units: bps, b/s, bit/s (bits) "
            "or B/s, Bps (bytes), with a prefix k, M, G, T, P or Ki, Mi, Gi, Ti, Pi; a plain number is bytes/s)");
  EXPECT_EQ(error_of(tiny_with("", "node_cores: 0\n")), "tiny.yaml: field 'node_cores': 0 must be >= 1");
  EXPECT_EQ(error_of(tiny_with("", "node_cores: 1.5\n")), "tiny.yaml: field 'node_cores': '1.5' is not a whole number");
  EXPECT_EQ(error_of(tiny_with("", "collectives: {alltoall: {efficiency: 1.5}}\n")),
            "tiny.yaml: field 'collectives.alltoall.efficiency': 1.5 must be in [0.001, 1] (a share of a rate)");
  EXPECT_EQ(error_of(tiny_with("", "collectives: {alltoall: {congestion_peers: -3}}\n")),
            "tiny.yaml: field 'collectives.alltoall.congestion_peers': -3 must be >= 0");
  EXPECT_EQ(error_of(tiny_with("", "collectives: {send: {efficiency: 0.5}}\n")),
            "tiny.yaml: field 'collectives.send': unknown collective 'send' (allowed: allreduce, alltoall, "
            "allgather, reducescatter, broadcast)");
  EXPECT_EQ(
      error_of(tiny_with("", "collectives: {alltoall: {}}\n")),
      "tiny.yaml: field 'collectives.alltoall': give at least one of efficiency, congestion_peers, per_peer, fit, "
      "step_wait");
  EXPECT_EQ(error_of(tiny_with("", "collectives: {alltoall: {efficency: 0.5}}\n")),
            "tiny.yaml: field 'collectives.alltoall.efficency': unknown field (allowed in 'collectives.alltoall': "
            "efficiency, congestion_peers, per_peer, fit, step_wait)");
}

}  // namespace
}  // namespace clustertwin::sim
