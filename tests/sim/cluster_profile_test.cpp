#include "models/cluster/cluster_profile.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "common/file_io.h"
#include "models/cluster/embedded_profiles.h"

namespace clustertwin::sim {
namespace {

const std::string kPlatformsDir = std::string(CT_SOURCE_DIR) + "/sim/platforms/";

cluster::ClusterProfile load(const std::string& name) {
  StatusOr<cluster::ClusterProfile> profile = cluster::load_cluster_profile(name);
  EXPECT_TRUE(profile.is_ok()) << profile.status().message();
  return profile.is_ok() ? *profile : cluster::ClusterProfile();
}

TEST(ShippedProfilesTest, NamesInTheOrderOfTheBuild) {
  EXPECT_EQ(cluster::shipped_profile_names(),
            (std::vector<std::string>{"h100-1024", "gpu-128", "h200-1gpu", "localhost-cpu", "npu-1536", "npu-768",
                                      "a100-dgx", "h100-dgx", "h200-dgx"}));
}

TEST(ShippedProfilesTest, EmbeddedCopiesAreTheSourceFiles) {
  for (const cluster::EmbeddedProfile& embedded : cluster::embedded_profiles()) {
    StatusOr<std::string> source = read_file(kPlatformsDir + std::string(embedded.name) + ".yaml");
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    EXPECT_EQ(embedded.yaml, *source) << embedded.name << ": rebuild to embed the edited YAML";
  }
}

TEST(ShippedProfilesTest, EveryOneLoadsByNameAndByPath) {
  for (const std::string& name : cluster::shipped_profile_names()) {
    cluster::ClusterProfile by_name = load(name);
    EXPECT_EQ(by_name.name, name);
    EXPECT_FALSE(by_name.description.empty()) << name;
    StatusOr<cluster::ClusterProfile> by_path = cluster::load_cluster_profile(kPlatformsDir + name + ".yaml");
    ASSERT_TRUE(by_path.is_ok()) << by_path.status().message();
    EXPECT_EQ(by_path->devices(), by_name.devices()) << name;
  }
}

TEST(ShippedProfilesTest, Npu768IsNpu1536AtFlexMarlsSize) {
  const cluster::ClusterProfile small = load("npu-768");
  const cluster::ClusterProfile large = load("npu-1536");
  EXPECT_EQ(small.nodes, 48);  // FlexMARL: 48 nodes x 16 NPUs
  EXPECT_EQ(small.devices(), 768);
  EXPECT_EQ(cluster::topology_capacity(small.topology), 48);
  EXPECT_EQ(small.devices_per_node, large.devices_per_node);
  EXPECT_DOUBLE_EQ(small.device.memory_bytes, 64e9);  // FlexMARL: 64 GB per NPU
  EXPECT_DOUBLE_EQ(small.device.memory_bandwidth, large.device.memory_bandwidth);
  EXPECT_EQ(small.device.peak_flops, large.device.peak_flops);
  EXPECT_DOUBLE_EQ(small.nics.link.bandwidth, large.nics.link.bandwidth);
  EXPECT_DOUBLE_EQ(small.host_link.bandwidth, large.host_link.bandwidth);
}

TEST(ShippedProfilesTest, Npu1536) {
  const cluster::ClusterProfile p = load("npu-1536");
  EXPECT_EQ(p.nodes, 96);
  EXPECT_EQ(p.devices_per_node, 16);
  EXPECT_EQ(p.devices(), 1536);  // 96 * 16, NestPipe's worker count
  EXPECT_EQ(p.default_dtype, "bf16");
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("bf16"), 376e12);  // 752 TFLOPS per 910C / 2 dies
  EXPECT_DOUBLE_EQ(p.device.memory_bytes, 64e9);
  EXPECT_DOUBLE_EQ(p.device.memory_bandwidth, 1.6e12);
  EXPECT_EQ(p.intra_node.kind, cluster::IntraNode::Kind::kSwitch);
  EXPECT_DOUBLE_EQ(p.intra_node.link.bandwidth, 196e9);  // 392 GB/s per 910C per direction / 2 dies
  EXPECT_EQ(p.nics.per_node, 16);
  EXPECT_DOUBLE_EQ(p.nics.link.bandwidth, 25e9);  // 200 Gb/s = 200e9 / 8 B/s
  EXPECT_DOUBLE_EQ(p.nics.link.latency, 2e-6);
  EXPECT_DOUBLE_EQ(p.host_memory_bandwidth, 750.8e9);  // 4 CPUs * 8 channels * 2933e6 * 8 B
  EXPECT_EQ(p.topology.kind, cluster::Topology::Kind::kFatTree);
  EXPECT_EQ(p.topology.levels, 2);
  EXPECT_EQ(p.topology.nodes_per_leaf, 8);
  EXPECT_EQ(p.topology.radix, 12);
  EXPECT_EQ(p.topology.oversubscription, std::vector<double>{1.0});
  EXPECT_EQ(cluster::topology_capacity(p.topology), 96);  // 8 * 12^(2-1)
  EXPECT_TRUE(p.costs.empty());                           // left to the calibrators
  // All-to-all: 2 us per peer (assumption, the NIC's latency); efficiency and congestion left to calibration.
  EXPECT_DOUBLE_EQ(p.collectives.at("alltoall").per_peer, 2e-6);
  EXPECT_DOUBLE_EQ(p.collectives.at("alltoall").efficiency, 1.0);
  EXPECT_DOUBLE_EQ(p.collectives.at("alltoall").byte_factor(1536), 1.0);
}

TEST(ShippedProfilesTest, Gpu128) {
  const cluster::ClusterProfile p = load("gpu-128");
  EXPECT_EQ(p.devices(), 128);  // 16 * 8
  EXPECT_EQ(p.device.name, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(p.device.memory_bandwidth, 2039e9);
  EXPECT_DOUBLE_EQ(p.intra_node.link.bandwidth, 300e9);  // NVLink3 600 GB/s both directions / 2
  EXPECT_EQ(p.nics.per_node, 8);
  EXPECT_DOUBLE_EQ(p.nics.link.bandwidth, 25e9);  // 200 Gb/s HDR = 200e9 / 8 B/s
  EXPECT_TRUE(p.nics.rail_optimized);
  EXPECT_EQ(p.topology.kind, cluster::Topology::Kind::kRailLeafSpine);
  EXPECT_EQ(cluster::topology_capacity(p.topology), 16);  // 8 nodes per leaf * radix 2
}

TEST(ShippedProfilesTest, H100_1024) {
  const cluster::ClusterProfile p = load("h100-1024");
  EXPECT_EQ(p.devices(), 1024);                                // 128 * 8
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("bf16"), 989.5e12);  // 1,979 TFLOPS with sparsity / 2
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("fp8"), 1979e12);
  EXPECT_DOUBLE_EQ(p.device.memory_bytes, 80e9);
  EXPECT_DOUBLE_EQ(p.device.memory_bandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(p.intra_node.link.bandwidth, 450e9);  // NVLink4 900 GB/s both directions / 2
  EXPECT_DOUBLE_EQ(p.nics.link.bandwidth, 50e9);         // 400 Gb/s = 400e9 / 8 B/s
  EXPECT_DOUBLE_EQ(p.host_link.bandwidth, 64e9);         // PCIe Gen5 128 GB/s both directions / 2
  EXPECT_EQ(p.topology.kind, cluster::Topology::Kind::kRailLeafSpine);
  EXPECT_EQ(p.topology.nodes_per_leaf, 32);
  EXPECT_EQ(cluster::topology_capacity(p.topology), 128);  // 32 * 4
  EXPECT_DOUBLE_EQ(p.topology.switch_link.bandwidth, 0);   // 0: as fast as what the links carry
  EXPECT_DOUBLE_EQ(p.topology.switch_link.latency, 0.2e-6);
}

// Selene-sized: the 560 DGX A100 nodes of Megatron-LM's and MT-NLG's runs.
TEST(ShippedProfilesTest, A100Dgx) {
  const cluster::ClusterProfile p = load("a100-dgx");
  EXPECT_EQ(p.devices(), 4480);  // 560 * 8, Selene's 4,480 GPUs
  EXPECT_EQ(p.device.name, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("bf16"), 312e12);  // 624 TFLOPS with sparsity / 2
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("tf32"), 156e12);
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("fp32"), 19.5e12);
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("int8"), 624e12);
  EXPECT_EQ(p.device.peak_flops.count("fp8"), 0u);  // A100 has no FP8 Tensor Cores
  EXPECT_DOUBLE_EQ(p.device.memory_bytes, 80e9);
  EXPECT_DOUBLE_EQ(p.device.memory_bandwidth, 2039e9);
  EXPECT_DOUBLE_EQ(p.intra_node.link.bandwidth, 300e9);  // NVLink3 600 GB/s both directions / 2
  EXPECT_DOUBLE_EQ(p.host_link.bandwidth, 32e9);         // PCIe Gen4 64 GB/s both directions / 2
  EXPECT_DOUBLE_EQ(p.host_memory_bandwidth, 409.6e9);    // 2 sockets * 8 channels * 3200e6 * 8 B
  EXPECT_EQ(p.nics.per_node, 8);
  EXPECT_DOUBLE_EQ(p.nics.link.bandwidth, 25e9);  // 200 Gb/s HDR = 200e9 / 8 B/s
  EXPECT_TRUE(p.nics.rail_optimized);
  EXPECT_EQ(p.topology.kind, cluster::Topology::Kind::kRailLeafSpine);
  EXPECT_EQ(p.topology.levels, 3);                         // leaf, spine, core as on Selene
  EXPECT_EQ(p.topology.nodes_per_leaf, 20);                // one SuperPOD scalable unit
  EXPECT_EQ(cluster::topology_capacity(p.topology), 980);  // 20 * 7^2: 7 pods of 140 nodes, 4 used
  EXPECT_TRUE(p.costs.empty());
}

TEST(ShippedProfilesTest, H100DgxIsH100_1024At16384Gpus) {
  const cluster::ClusterProfile p = load("h100-dgx");
  const cluster::ClusterProfile small = load("h100-1024");
  EXPECT_EQ(p.devices(), 16384);  // 2,048 * 8
  EXPECT_EQ(p.topology.levels, 3);
  EXPECT_EQ(cluster::topology_capacity(p.topology), 2048);                  // 32 * 8^2: 64 scalable units of 32 nodes
  EXPECT_EQ(p.topology.oversubscription, (std::vector<double>{1.0, 1.0}));  // one number, for both levels above
  EXPECT_EQ(p.topology.nodes_per_leaf, small.topology.nodes_per_leaf);
  EXPECT_EQ(p.device.peak_flops, small.device.peak_flops);
  EXPECT_DOUBLE_EQ(p.device.memory_bandwidth, small.device.memory_bandwidth);
  EXPECT_DOUBLE_EQ(p.intra_node.link.bandwidth, small.intra_node.link.bandwidth);
  EXPECT_DOUBLE_EQ(p.nics.link.bandwidth, small.nics.link.bandwidth);
  EXPECT_DOUBLE_EQ(p.host_link.bandwidth, small.host_link.bandwidth);
  EXPECT_DOUBLE_EQ(p.host_memory_bandwidth, small.host_memory_bandwidth);
  EXPECT_TRUE(p.costs.empty());
}

TEST(ShippedProfilesTest, H200Dgx) {
  const cluster::ClusterProfile p = load("h200-dgx");
  const cluster::ClusterProfile h100 = load("h100-1024");
  EXPECT_EQ(p.devices(), 1024);                            // 128 * 8
  EXPECT_EQ(p.device.peak_flops, h100.device.peak_flops);  // the H100's Tensor Core rates
  EXPECT_DOUBLE_EQ(p.device.memory_bytes, 141e9);
  EXPECT_DOUBLE_EQ(p.device.memory_bandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(p.intra_node.link.bandwidth, 450e9);  // NVLink4 900 GB/s both directions / 2
  EXPECT_DOUBLE_EQ(p.host_link.bandwidth, 55.4e9);       // measured on the lent H200, as h200-1gpu
  EXPECT_DOUBLE_EQ(p.host_link.bandwidth, load("h200-1gpu").host_link.bandwidth);
  EXPECT_DOUBLE_EQ(p.nics.link.bandwidth, 50e9);  // 400 Gb/s = 400e9 / 8 B/s
  EXPECT_EQ(p.nics.per_node, 8);
  EXPECT_EQ(cluster::topology_capacity(p.topology), 128);  // 32 * 4
  EXPECT_TRUE(p.costs.empty());
}

TEST(ShippedProfilesTest, LocalhostCpu) {
  const cluster::ClusterProfile p = load("localhost-cpu");
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.devices(), 4);
  EXPECT_EQ(p.default_dtype, "fp32");
  EXPECT_DOUBLE_EQ(p.device.peak_flops.at("fp32"), 25e9);
  EXPECT_DOUBLE_EQ(p.intra_node.link.bandwidth, 3e9);
  EXPECT_DOUBLE_EQ(p.intra_node.link.latency, 30e-6);
  EXPECT_EQ(p.topology.kind, cluster::Topology::Kind::kSingleSwitch);
}

constexpr char kMixed[] = R"(
nodes: 4
devices_per_node: 2
device: {name: gpu-a, peak_flops: {bf16: 100TFLOPS}, memory: 16GB, memory_bandwidth: 1TB/s}
device_types:
  - {name: gpu-b, peak_flops: {bf16: 50TFLOPS, fp32: 10TFLOPS}, memory: 8GiB, memory_bandwidth: 500GB/s,
     compute_efficiency: 0.5}
node_device_type: {"2-3": gpu-b, 1: gpu-a}
slowdown: {"0-1": 1.5, 5: 2}
host_link: {bandwidth: 16GB/s}
host_memory_bandwidth: 100GB/s
intra_node: {kind: full_mesh, bandwidth: 100GB/s, latency: 1us}
nics: {per_node: 2, bandwidth: 100Gbps, rail_optimized: true}
topology: {kind: dragonfly, nodes_per_leaf: 1, routers_per_group: 2, global_links_per_router: 1}
costs:
  embedding_lookup: {latency: 5us, byte_rate: 20GB/s}
  attention: {flop_rate: 40TFLOPS}
)";

TEST(ParseClusterProfileTest, MixedDeviceTypesStragglersAndCosts) {
  StatusOr<cluster::ClusterProfile> parsed = cluster::parse_cluster_profile(kMixed, "/some/dir/mixed.yaml");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  const cluster::ClusterProfile& p = *parsed;
  EXPECT_EQ(p.name, "mixed");  // no name field: the file's stem
  EXPECT_EQ(p.device_type_of(0).name, "gpu-a");
  EXPECT_EQ(p.device_type_of(3).name, "gpu-a");  // node 1 names the default type, which needs no entry
  EXPECT_EQ(p.device_type_of(4).name, "gpu-b");  // node 2 = ranks 4, 5
  EXPECT_EQ(p.device_type_of(7).name, "gpu-b");  // node 3 = ranks 6, 7
  EXPECT_EQ(p.node_device_type.size(), 2u);      // nodes 2 and 3
  EXPECT_DOUBLE_EQ(p.device_type_of(7).memory_bytes, 8.0 * 1024 * 1024 * 1024);  // 8 GiB
  EXPECT_DOUBLE_EQ(p.device_type_of(7).compute_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(p.device_type_of(0).compute_efficiency, 1.0);  // the default
  EXPECT_DOUBLE_EQ(p.slowdown_of(0), 1.5);
  EXPECT_DOUBLE_EQ(p.slowdown_of(1), 1.5);
  EXPECT_DOUBLE_EQ(p.slowdown_of(2), 1.0);  // absent: not slowed
  EXPECT_DOUBLE_EQ(p.slowdown_of(5), 2.0);
  EXPECT_EQ(p.intra_node.kind, cluster::IntraNode::Kind::kFullMesh);
  EXPECT_DOUBLE_EQ(p.host_link.latency, 0);  // latency defaults to 0
  EXPECT_EQ(p.topology.kind, cluster::Topology::Kind::kDragonfly);
  // embedding_lookup of 1 MB: 5 us + 1e6 B / 20e9 B/s = 5e-6 + 50e-6 s
  EXPECT_DOUBLE_EQ(p.costs.at("embedding_lookup").seconds(0, 1e6), 55e-6);
  // attention of 80 TFLOP: 80e12 / 40e12 FLOP/s = 2 s; no latency, bytes not counted
  EXPECT_DOUBLE_EQ(p.costs.at("attention").seconds(80e12, 1e9), 2.0);
}

TEST(CostModelTest, AbsentRatesAddNothing) {
  struct Case {
    cluster::CostModel model;
    double flops, bytes, expected;
  };
  const Case cases[] = {
      {{0, 0, 0}, 1e12, 1e9, 0},               // nothing set: free
      {{1e-6, 0, 0}, 1e12, 1e9, 1e-6},         // latency only
      {{1e-6, 1e12, 0}, 2e12, 1e9, 2.000001},  // 1 us + 2e12 / 1e12
      {{0, 1e12, 1e10}, 1e12, 1e10, 2.0},      // 1e12 / 1e12 + 1e10 / 1e10
      {{2e-6, 0, 25e9}, 0, 50e9, 2.000002},    // 2 us + 50e9 / 25e9
  };
  for (const Case& c : cases)
    EXPECT_DOUBLE_EQ(c.model.seconds(c.flops, c.bytes), c.expected);
}

TEST(TopologyCapacityTest, ByKind) {
  cluster::Topology tree;
  tree.kind = cluster::Topology::Kind::kFatTree;
  tree.levels = 3;
  tree.nodes_per_leaf = 4;
  tree.radix = 8;
  EXPECT_EQ(cluster::topology_capacity(tree), 256);  // 4 * 8^(3-1)
  tree.levels = 1;
  EXPECT_EQ(cluster::topology_capacity(tree), 4);  // one leaf switch
  tree.levels = 40;
  EXPECT_EQ(cluster::topology_capacity(tree), std::numeric_limits<int64_t>::max());  // 4 * 8^39 saturates

  cluster::Topology fly;
  fly.kind = cluster::Topology::Kind::kDragonfly;
  fly.nodes_per_leaf = 2;
  fly.routers_per_group = 4;
  fly.global_links_per_router = 2;
  EXPECT_EQ(cluster::topology_capacity(fly), 72);  // (4 * 2 + 1) groups * 4 routers * 2 nodes

  EXPECT_EQ(cluster::topology_capacity(cluster::Topology()), std::numeric_limits<int64_t>::max());  // single switch
  EXPECT_EQ(cluster::topology_kind_name(cluster::Topology::Kind::kRailLeafSpine), "rail_leaf_spine");
}

TEST(CheckWorkerCountTest, Npu1536) {
  const cluster::ClusterProfile p = load("npu-1536");
  struct Case {
    int workers;
    std::string message;  // empty: accepted
  };
  const Case cases[] = {
      {1, ""},
      {8, ""},  // fewer than one node's 16 devices: part of one node
      {16, ""},
      {128, ""},
      {768, ""},  // FlexMARL's 48 nodes * 16
      {1536, ""},
      {100, "workers 100: not a multiple of devices_per_node 16 of profile 'npu-1536'"},
      {24, "workers 24: not a multiple of devices_per_node 16 of profile 'npu-1536'"},
      {2048, "workers 2048: more than the 1536 devices of profile 'npu-1536'"},
      {0, "workers 0: must be at least 1"},
      {-3, "workers -3: must be at least 1"},
  };
  for (const Case& c : cases) {
    const Status status = cluster::check_worker_count(p, c.workers);
    if (c.message.empty()) {
      EXPECT_TRUE(status.is_ok()) << c.workers << ": " << status.message();
    } else {
      EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << c.workers;
      EXPECT_EQ(status.message(), c.message);
    }
  }
}

TEST(LoadClusterProfileTest, UnknownNameListsTheShippedOnes) {
  StatusOr<cluster::ClusterProfile> profile = cluster::load_cluster_profile("x");
  ASSERT_FALSE(profile.is_ok());
  EXPECT_EQ(profile.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(profile.status().message(),
            "unknown platform 'x' (shipped: h100-1024, gpu-128, h200-1gpu, localhost-cpu, npu-1536, npu-768, a100-dgx, "
            "h100-dgx, h200-dgx; or a path to a .yaml file)");
}

TEST(LoadClusterProfileTest, MissingFileIsNamed) {
  StatusOr<cluster::ClusterProfile> profile = cluster::load_cluster_profile("no/such/cluster.yaml");
  ASSERT_FALSE(profile.is_ok());
  EXPECT_EQ(profile.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(profile.status().message(), "no/such/cluster.yaml: no such file");
}

TEST(LoadClusterProfileTest, XmlPlatformBecomesAProfileWithoutDevices) {
  StatusOr<cluster::ClusterProfile> missing = cluster::load_cluster_profile("cluster.xml");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(), "cluster.xml: no such file");
  const std::string path = std::string(CT_TEST_DATA_DIR) + "/platforms/eight_hosts.xml";
  StatusOr<cluster::ClusterProfile> xml = cluster::load_cluster_profile(path);
  ASSERT_TRUE(xml.is_ok()) << xml.status().message();
  EXPECT_EQ(xml->simgrid_platform, path);
  EXPECT_EQ(xml->name, "eight_hosts.xml");
  EXPECT_TRUE(xml->device.peak_flops.empty());  // no device model: compute needs costs
}

TEST(LoadClusterProfileTest, ReadsAUserFile) {
  const std::string path = ::testing::TempDir() + "ct_profile_user.yaml";
  ASSERT_TRUE(write_file_atomically(path, kMixed).is_ok());
  StatusOr<cluster::ClusterProfile> profile = cluster::load_cluster_profile(path);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_EQ(profile->name, "ct_profile_user");
  EXPECT_EQ(profile->devices(), 8);
}

}  // namespace
}  // namespace clustertwin::sim
