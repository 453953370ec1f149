// Closed forms of `clustertwin plan mix` (sim/mix/mix_plan.h): on a
// non-blocking fabric the answer is the sum of each job's alone size; on an
// oversubscribed spine the alone sizes collide, and the planner either moves
// the jobs onto pods of their own or grows one of them.

#include "sim/mix/mix_plan.h"

#include <gtest/gtest.h>

#include "tests/mix/mix_test_util.h"

namespace clustertwin::sim::mix::plan_test {
namespace {

using mix::testing::kNicBandwidth;
using mix::testing::parse_or_die;
using mix::testing::two_leaf_profile;

// Every job below: 10 ms of compute, then a ring all-reduce of 16 MiB, 32
// samples a worker per step, one worker a node. With every latency 0, a
// ring of n ranks is 2(n-1) rounds of S/n, each at its slowest hop's rate:
//   step(n) = 10 ms + 2(n-1)/n x 16 MiB / rate,   samples/s = 32 n / step(n)
constexpr double kCompute = 10e-3;
constexpr double kBytes = 16.0 * 1024 * 1024;
constexpr int kBatch = 32;

double samples_per_s(int n, double rate) {
  return kBatch * n / (kCompute + 2.0 * (n - 1) / n * kBytes / rate);
}

std::string job(const std::string& name, int target) {
  return "  - {name: " + name + ", target: {samples_per_s: " + std::to_string(target) +
         ", batch_per_worker: 32}, data_parallel: {compute: 10ms, allreduce_bytes: 16MiB}}\n";
}

StatusOr<MixPlan> plan(const std::string& jobs, const cluster::ClusterProfile& profile,
                       const std::vector<std::string>& placements) {
  const MixSpec mix = parse_or_die("profile: test\njobs:\n" + jobs);
  MixPlanOptions o;
  o.placements = placements;
  o.parallel = 2;
  return plan_mix(mix, profile, o);
}

// At the NIC's 12.5 GB/s: 1 node 3,200 samples/s, 2 nodes 5,642.6, 3 nodes 8,144.2.
// a (8,000) needs 3 nodes, b (5,000) 2; a non-blocking fabric carries both
// rings at full rate, so the first policy tried meets both at 3 + 2 = 5.
TEST(MixPlanTest, OnANonBlockingFabricTheAnswerIsTheSumOfTheAloneSizes) {
  const cluster::ClusterProfile profile = two_leaf_profile(1);
  auto p = plan(job("a", 8000) + job("b", 5000), profile, {"spread", "packed"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_TRUE(p->feasible) << p->why_not;
  ASSERT_EQ(p->alone.size(), 2u);
  EXPECT_EQ(p->alone[0].workers, 3);
  EXPECT_EQ(p->alone[1].workers, 2);
  EXPECT_NEAR(p->alone[0].throughput, samples_per_s(3, kNicBandwidth), 1e-6 * samples_per_s(3, kNicBandwidth));
  // The evidence: one node fewer misses, alone.
  EXPECT_TRUE(p->alone[0].has_below);
  EXPECT_EQ(p->alone[0].below_workers, 2);
  EXPECT_NEAR(p->alone[0].below_throughput, samples_per_s(2, kNicBandwidth), 1e-3);
  EXPECT_EQ(p->alone[1].below_workers, 1);
  EXPECT_NEAR(p->alone[1].below_throughput, 3200, 1e-6);
  EXPECT_EQ(p->lower_bound_nodes, 5);
  EXPECT_EQ(p->answer.nodes, 5);
  EXPECT_EQ(p->answer.workers, (std::vector<int>{3, 2}));
  EXPECT_EQ(p->answer.placement, "spread");  // the first policy listed, and it meets
  EXPECT_TRUE(p->below.empty());             // at the lower bound there is nothing to check below
  for (const JobResult& r : p->answer.result.jobs)
    EXPECT_NEAR(r.slowdown, 1.0, 0.01) << r.name;
  EXPECT_EQ(p->tries.size(), 2u);  // the alone sizes, under spread and packed: nothing grown
}

// Leaves of 2 nodes under a 3:1 spine: a leaf's uplink carries 2 x 12.5 / 3 =
// 8.33 GB/s. A job of 3 nodes spans two leaves; alone, its crossing hops
// run at the uplink's 8.33 GB/s: 3 nodes 7,568.4 samples/s, 2 nodes
// (one leaf, 12.5 GB/s) 5,642.6. Two jobs of target 7,000 each take 3 nodes.
//
//   leaf:   0       1       2       3
//   nodes: 0 1  | 2 3  |  4 5  |  6 7
//   packed   a a    a b     b b        leaf 1's uplink and downlink carry a hop of
//                                      each ring: 4.17 GB/s each, 6,246.5 samples/s
//   isolated a a    a .     b b    b . each job on leaves of its own: no shared link
cluster::ClusterProfile leaves_of_two() {
  const std::string yaml = R"(name: leaves-of-two
nodes: 8
devices_per_node: 1
device: {name: gpu, peak_flops: {bf16: 100TFLOPS}, memory: 80GB, memory_bandwidth: 2TB/s}
host_link: {bandwidth: 50GB/s}
host_memory_bandwidth: 200GB/s
nics: {per_node: 1, bandwidth: 100Gbps}
topology: {kind: fat_tree, levels: 2, nodes_per_leaf: 2, radix: 4, oversubscription: 3}
)";
  auto profile = cluster::parse_cluster_profile(yaml, "leaves-of-two.yaml");
  EXPECT_TRUE(profile.is_ok()) << profile.status().message();
  return *profile;
}

constexpr double kUplink = 2 * kNicBandwidth / 3;

TEST(MixPlanTest, CollidingAloneSizesMoveToPodsOfTheirOwn) {
  const cluster::ClusterProfile profile = leaves_of_two();
  auto p = plan(job("a", 7000) + job("b", 7000), profile, {"packed", "spread", "isolated"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_TRUE(p->feasible) << p->why_not;
  EXPECT_EQ(p->alone[0].workers, 3);
  EXPECT_NEAR(p->alone[0].throughput, samples_per_s(3, kUplink), 1e-6 * samples_per_s(3, kUplink));
  EXPECT_EQ(p->lower_bound_nodes, 6);
  EXPECT_EQ(p->answer.nodes, 6);
  EXPECT_EQ(p->answer.placement, "isolated");
  EXPECT_EQ(p->answer.result.jobs[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p->answer.result.jobs[1].nodes, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(p->answer.result.shared_links, 0);
  EXPECT_EQ(p->answer.pod_nodes, 8);  // leaves 0-3: nodes 3 and 7 stay idle
  ASSERT_EQ(p->at_answer.size(), 3u);
  // Packed and spread miss: each crossing hop gets half an uplink, 4.17 GB/s.
  for (int i : {0, 1}) {
    const MixTry& t = p->at_answer[i];
    EXPECT_FALSE(t.meets) << t.placement;
    EXPECT_NEAR(t.worst * 7000, samples_per_s(3, kUplink / 2), 0.02 * samples_per_s(3, kUplink / 2)) << t.placement;
    EXPECT_GT(t.result.shared_links, 0) << t.placement;
  }
  EXPECT_TRUE(p->at_answer[2].meets);
}

// Without `isolated`, only more nodes help: a grows to 4 nodes (its best rate
// in the mix, 6,246.5 / 3 a worker, proves it needs 7,000 / 2,082.2 = 3.4
// nodes), leaves 0-1 are a's and 2-3 b's, and nothing is shared: a 4 nodes at
// 8.33 GB/s gives 9,831.1 samples/s. One node fewer is the colliding 3 + 3.
TEST(MixPlanTest, CollidingAloneSizesGrowWhenNoPolicyAvoidsTheContention) {
  const cluster::ClusterProfile profile = leaves_of_two();
  auto p = plan(job("a", 7000) + job("b", 7000), profile, {"packed", "spread"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_TRUE(p->feasible) << p->why_not;
  EXPECT_EQ(p->lower_bound_nodes, 6);
  EXPECT_EQ(p->answer.nodes, 7);
  EXPECT_EQ(p->answer.workers, (std::vector<int>{4, 3}));
  EXPECT_EQ(p->answer.placement, "packed");
  EXPECT_EQ(p->answer.result.shared_links, 0);
  const JobResult& a = p->answer.result.jobs[0];
  EXPECT_NEAR(kBatch * 4 / a.mixed.step_time_s, samples_per_s(4, kUplink), 1e-6 * samples_per_s(4, kUplink));
  // The check below: 6 nodes split one way only (each job at least its alone 3), under both policies, misses.
  EXPECT_TRUE(p->below_every_split);
  ASSERT_EQ(p->below.size(), 2u);
  for (const MixTry& t : p->below) {
    EXPECT_EQ(t.workers, (std::vector<int>{3, 3})) << t.placement;
    EXPECT_FALSE(t.meets) << t.placement;
  }
}

TEST(MixPlanTest, AFixedJobThatMissesUnderEveryPolicyHasNoAnswer) {
  const cluster::ClusterProfile profile = leaves_of_two();
  // b's 3 nodes are fixed, and 3 nodes alone make 7,568.4 samples/s: a target of 8,000 cannot be met.
  auto p = plan(job("a", 7000) +
                    "  - {name: b, workers: 3, target: {samples_per_s: 8000, batch_per_worker: 32}, data_parallel: "
                    "{compute: 10ms, allreduce_bytes: 16MiB}}\n",
                profile, {"packed"});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_FALSE(p->feasible);
  EXPECT_NE(p->why_not.find("job 'b' (workers fixed by the file) misses its target"), std::string::npos) << p->why_not;
}

TEST(MixPlanTest, UnknownPoliciesAreRefused) {
  const cluster::ClusterProfile profile = leaves_of_two();
  auto p = plan(job("a", 7000), profile, {"packed", "tight"});
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().message(), "placements 'tight': unknown policy (allowed: packed, spread, random, isolated)");
}

TEST(MixPlanTest, IsolatedGivesEachJobPodsOfItsOwn) {
  const cluster::ClusterProfile profile = leaves_of_two();
  MixSpec mix = parse_or_die("profile: test\njobs:\n" + job("a", 1) + job("b", 1) + job("c", 1));
  mix.jobs[0].workers = 3;  // leaves 0-1
  mix.jobs[1].workers = 1;  // leaf 2
  mix.jobs[2].workers = 2;  // leaf 3
  auto nodes = isolated_placement(mix, profile);
  ASSERT_TRUE(nodes.has_value());
  EXPECT_EQ(*nodes, (std::vector<std::vector<int>>{{0, 1, 2}, {4}, {6, 7}}));
  mix.jobs[2].workers = 3;  // leaf 3 has 2 nodes: no pods left
  EXPECT_FALSE(isolated_placement(mix, profile).has_value());
}

}  // namespace
}  // namespace clustertwin::sim::mix::plan_test
