// Each collective algorithm on a uniform single-switch platform against its
// closed form, at both fidelities. alpha is the route latency, beta the link
// bandwidth, n the group, S the nccl-tests size (models/plan/plan.h).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "sim/core/collective_bench.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

using models::Algorithm;
using models::CollectiveOp;

constexpr int kN = 8;
constexpr double kBeta = 10e9;        // 10 GB/s per NIC
constexpr double kNicLatency = 1e-6;  // per NIC link
constexpr double kSwitchLatency = 0.5e-6;
constexpr double kAlpha = 2 * kNicLatency + kSwitchLatency;  // 2.5 us
const double kLog2N = std::log2(kN);                         // 3

struct ClosedFormCase {
  const char* label;
  CollectiveOp op;
  Algorithm algorithm;
  double (*closed_form)(double S);
};

const ClosedFormCase kCases[] = {
    // 2(n-1) rounds of S/n to the next rank.
    {"allreduce_ring", CollectiveOp::kAllReduce, Algorithm::kRing,
     [](double S) { return 2.0 * (kN - 1) * (kAlpha + S / (kN * kBeta)); }},
    // Binomial reduce then broadcast: 2 log2 n rounds of the whole buffer.
    {"allreduce_tree", CollectiveOp::kAllReduce, Algorithm::kTree,
     [](double S) { return 2.0 * kLog2N * (kAlpha + S / kBeta); }},
    // Recursive halving then doubling: 2 log2 n latencies, 2 (n-1)/n S on the wire.
    {"allreduce_halving_doubling", CollectiveOp::kAllReduce, Algorithm::kHalvingDoubling,
     [](double S) { return 2.0 * kLog2N * kAlpha + 2.0 * (kN - 1) / kN * S / kBeta; }},
    // Direct reduce-scatter then all-gather: each rank sends S/n to n-1 peers twice.
    {"allreduce_direct", CollectiveOp::kAllReduce, Algorithm::kDirect,
     [](double S) { return 2.0 * (kAlpha + (kN - 1) * S / kN / kBeta); }},
    // Every pair at once: (n-1) S/n through each rank's link.
    {"alltoall_direct", CollectiveOp::kAllToAll, Algorithm::kDirect,
     [](double S) { return kAlpha + (kN - 1) * S / kN / kBeta; }},
    // n-1 rounds of S/n (S is the total size).
    {"allgather_ring", CollectiveOp::kAllGather, Algorithm::kRing,
     [](double S) { return (kN - 1) * (kAlpha + S / (kN * kBeta)); }},
    {"reducescatter_ring", CollectiveOp::kReduceScatter, Algorithm::kRing,
     [](double S) { return (kN - 1) * (kAlpha + S / (kN * kBeta)); }},
    // Recursive doubling: log2 n latencies, (n-1)/n S on the wire.
    {"allgather_halving_doubling", CollectiveOp::kAllGather, Algorithm::kHalvingDoubling,
     [](double S) { return kLog2N * kAlpha + (kN - 1) * S / kN / kBeta; }},
    {"reducescatter_halving_doubling", CollectiveOp::kReduceScatter, Algorithm::kHalvingDoubling,
     [](double S) { return kLog2N * kAlpha + (kN - 1) * S / kN / kBeta; }},
    {"allgather_direct", CollectiveOp::kAllGather, Algorithm::kDirect,
     [](double S) { return kAlpha + (kN - 1) * S / kN / kBeta; }},
    // Binomial tree: log2 n rounds of S.
    {"broadcast_tree", CollectiveOp::kBroadcast, Algorithm::kTree,
     [](double S) { return kLog2N * (kAlpha + S / kBeta); }},
    // The root sends S to n-1 ranks through its one link.
    {"broadcast_direct", CollectiveOp::kBroadcast, Algorithm::kDirect,
     [](double S) { return kAlpha + (kN - 1) * S / kBeta; }},
    {"send", CollectiveOp::kSend, Algorithm::kDirect, [](double S) { return kAlpha + S / kBeta; }},
};

class ClosedFormTest : public ::testing::TestWithParam<std::tuple<ClosedFormCase, Fidelity>> {};

TEST_P(ClosedFormTest, WithinTwoPercent) {
  const auto& [c, fidelity] = GetParam();
  CollectiveBenchOptions o;
  o.op = c.op;
  o.algorithm = c.algorithm;
  o.sizes = {64 << 10, 16 << 20};  // latency-bound and bandwidth-bound
  o.workers = kN;
  o.fidelity = fidelity;
  auto rows = bench_collective(o, testing::uniform_switch(kN, kBeta, kNicLatency, kSwitchLatency));
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  for (const auto& row : *rows) {
    const double expected = c.closed_form(static_cast<double>(row.bytes));
    EXPECT_NEAR(row.time_s, expected, 0.02 * expected) << c.label << " at " << row.bytes << " B";
    std::printf("%s %s %lld B: simulated %.3f us, closed form %.3f us (%+.3f%%)\n", c.label,
                std::string(fidelity_name(fidelity)).c_str(), static_cast<long long>(row.bytes), row.time_s * 1e6,
                expected * 1e6, 100 * (row.time_s - expected) / expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ClosedFormTest,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(Fidelity::kStep, Fidelity::kFlow)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).label) + "_" +
                                  std::string(fidelity_name(std::get<1>(info.param)));
                         });

// Hierarchical all-reduce on 2 nodes of 4 devices (one NIC each): intra-node
// reduce-scatter, a ring across the nodes per local index, intra-node all-gather.
TEST(ClosedFormHierarchicalTest, AllReduceHierarchical) {
  cluster::ClusterProfile p = testing::uniform_switch(2, kBeta, kNicLatency, kSwitchLatency);
  p.devices_per_node = 4;
  p.nics.per_node = 4;
  p.nics.rail_optimized = true;
  p.intra_node.link = {100e9, 2e-6};  // switch: 1 us up + 1 us down
  const int m = 4, k = 2, n = m * k;
  const double alpha_in = 2e-6, beta_in = 100e9;
  for (Fidelity fidelity : {Fidelity::kStep, Fidelity::kFlow}) {
    CollectiveBenchOptions o;
    o.op = CollectiveOp::kAllReduce;
    o.algorithm = Algorithm::kHierarchical;
    o.sizes = {32 << 20};
    o.workers = n;
    o.fidelity = fidelity;
    auto rows = bench_collective(o, p);
    ASSERT_TRUE(rows.is_ok()) << rows.status().message();
    const double S = 32 << 20;
    // (m-1) rounds of S/m inside the node, twice; 2(k-1) rounds of S/n across,
    // each device on its own NIC (the node uplink carries m NICs' worth).
    const double expected = 2 * (m - 1) * (alpha_in + S / m / beta_in) + 2 * (k - 1) * (kAlpha + S / n / kBeta);
    EXPECT_NEAR(rows->front().time_s, expected, 0.02 * expected) << fidelity_name(fidelity);
  }
}

TEST(ClosedFormTest, HalvingDoublingNeedsAPowerOfTwo) {
  CollectiveBenchOptions o;
  o.op = CollectiveOp::kAllReduce;
  o.algorithm = Algorithm::kHalvingDoubling;
  o.sizes = {1 << 20};
  o.workers = 6;
  auto rows = bench_collective(o, testing::uniform_switch(6, kBeta, kNicLatency, kSwitchLatency));
  ASSERT_FALSE(rows.is_ok());
  EXPECT_NE(rows.status().message().find("algorithm 'halving_doubling' does not apply to allreduce on a group of 6 "
                                         "(not a power of two)"),
            std::string::npos)
      << rows.status().message();
}

}  // namespace
}  // namespace clustertwin::sim

namespace clustertwin::sim {
namespace {

// The same ring all-reduce on a SimGrid platform file with the same alpha and beta.
TEST(ClosedFormPlatformFileTest, RingAllReduceOnAnXmlPlatform) {
  auto profile = cluster::load_cluster_profile(std::string(CT_TEST_DATA_DIR) + "/platforms/eight_hosts.xml");
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  CollectiveBenchOptions o;
  o.op = CollectiveOp::kAllReduce;
  o.algorithm = Algorithm::kRing;
  o.sizes = {16 << 20};
  o.workers = kN;
  for (Fidelity fidelity : {Fidelity::kStep, Fidelity::kFlow}) {
    o.fidelity = fidelity;
    auto rows = bench_collective(o, *profile);
    ASSERT_TRUE(rows.is_ok()) << rows.status().message();
    const double expected = 2.0 * (kN - 1) * (kAlpha + (16 << 20) / (kN * kBeta));
    EXPECT_NEAR(rows->front().time_s, expected, 0.02 * expected) << fidelity_name(fidelity);
  }
  o.workers = 9;
  auto too_many = bench_collective(o, *profile);
  ASSERT_FALSE(too_many.is_ok());
  EXPECT_NE(too_many.status().message().find("has 8 hosts"), std::string::npos) << too_many.status().message();
}

}  // namespace
}  // namespace clustertwin::sim
