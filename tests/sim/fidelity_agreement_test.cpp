// The flow fidelity (aggregate flows per phase and node pair) against the
// step fidelity (every message) for every collective and algorithm, at 8, 16
// and 64 workers on each shipped profile that holds that many devices.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "sim/core/simulator.h"

namespace clustertwin::sim {
namespace {

using models::Algorithm;
using models::CollectiveOp;

struct Variant {
  CollectiveOp op;
  Algorithm algorithm;
};

const Variant kVariants[] = {
    {CollectiveOp::kAllReduce, Algorithm::kRing},
    {CollectiveOp::kAllReduce, Algorithm::kTree},
    {CollectiveOp::kAllReduce, Algorithm::kHalvingDoubling},
    {CollectiveOp::kAllReduce, Algorithm::kHierarchical},
    {CollectiveOp::kAllReduce, Algorithm::kDirect},
    {CollectiveOp::kAllToAll, Algorithm::kDirect},
    {CollectiveOp::kAllToAll, Algorithm::kHierarchical},
    {CollectiveOp::kAllGather, Algorithm::kRing},
    {CollectiveOp::kAllGather, Algorithm::kHalvingDoubling},
    {CollectiveOp::kAllGather, Algorithm::kDirect},
    {CollectiveOp::kReduceScatter, Algorithm::kRing},
    {CollectiveOp::kReduceScatter, Algorithm::kHalvingDoubling},
    {CollectiveOp::kBroadcast, Algorithm::kTree},
    {CollectiveOp::kBroadcast, Algorithm::kDirect},
};

// Every variant at two sizes, one after the other on one stream, plus a send/recv pair.
models::Plan all_collectives_plan() {
  models::Plan plan;
  plan.system = "collectives";
  plan.variant = "fidelity";
  plan.streams = {"comm"};
  auto add = [&](const std::string& name, models::Collective c, int64_t bytes, std::vector<models::RankRange> ranks) {
    models::Task t;
    t.id = static_cast<int>(plan.tasks.size());
    t.name = name;
    t.kind = models::TaskKind::kCollective;
    t.bytes = bytes;
    t.collective = c;
    t.ranks = std::move(ranks);
    plan.tasks.push_back(t);
  };
  for (int64_t bytes : {int64_t{256} << 10, int64_t{32} << 20}) {
    for (const Variant& v : kVariants) {
      models::Collective c;
      c.op = v.op;
      c.algorithm = v.algorithm;
      add(std::string(models::collective_op_name(v.op)) + "/" + std::string(models::algorithm_name(v.algorithm)) + "/" +
              std::to_string(bytes),
          c, bytes, {});
    }
    models::Collective send;
    send.op = CollectiveOp::kSend;
    send.peer_offset = 1;
    send.tag = static_cast<int>(bytes);
    add("send/" + std::to_string(bytes), send, bytes, {{0, 1}});
    models::Collective recv = send;
    recv.op = CollectiveOp::kRecv;
    recv.peer_offset = -1;
    add("recv/" + std::to_string(bytes), recv, bytes, {{1, 2}});
  }
  return plan;
}

class FidelityAgreementTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(FidelityAgreementTest, FlowWithinFivePercentOfStep) {
  const auto& [platform, workers] = GetParam();
  auto profile = cluster::load_cluster_profile(platform);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  if (workers > profile->devices()) GTEST_SKIP() << platform << " has " << profile->devices() << " devices";
  const models::Plan plan = all_collectives_plan();
  SimOptions o;
  o.workers = workers;
  o.steps = 1;
  o.warmup_steps = 0;
  o.drain_steps = 0;
  o.auto_fidelity = false;
  o.fidelity = Fidelity::kStep;
  auto step = simulate_plan(plan, *profile, o);
  ASSERT_TRUE(step.is_ok()) << step.status().message();
  o.fidelity = Fidelity::kFlow;
  auto flow = simulate_plan(plan, *profile, o);
  ASSERT_TRUE(flow.is_ok()) << flow.status().message();
  double worst = 0;
  std::string worst_task;
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    const double s = step->tasks[t].max_s, f = flow->tasks[t].max_s;
    EXPECT_NEAR(f, s, 0.05 * s) << plan.tasks[t].name << " on " << platform << " at " << workers << " workers";
    if (s > 0 && std::abs(f - s) / s > worst) {
      worst = std::abs(f - s) / s;
      worst_task = plan.tasks[t].name;
    }
  }
  std::printf("flow vs step on %s at %d workers: largest difference %.2f%% (%s)\n", platform.c_str(), workers,
              100 * worst, worst_task.c_str());
}

// localhost-cpu holds 4 workers only: it is checked at 4, and skips the rest.
INSTANTIATE_TEST_SUITE_P(ShippedProfiles, FidelityAgreementTest,
                         ::testing::Combine(::testing::Values("npu-1536", "gpu-128", "h100-1024", "localhost-cpu"),
                                            ::testing::Values(4, 8, 16, 64)),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param));
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace clustertwin::sim

namespace clustertwin::sim {
namespace {

// At 1,024 workers (64 nodes of npu-1536, 128 of h100-1024) a uniform
// exchange is merged per (node, switch group) instead of per node pair; both
// must agree, also on a fat tree oversubscribed 3:1 where the group links
// are the bottleneck, and with intra-node links slower than the NICs.
TEST(GroupMergeTest, MatchesNodePairFlows) {
  models::Plan plan;
  plan.system = "collectives";
  plan.variant = "merge";
  plan.streams = {"comm"};
  for (auto [op, algo] :
       {std::pair{CollectiveOp::kAllToAll, Algorithm::kDirect}, std::pair{CollectiveOp::kAllGather, Algorithm::kDirect},
        std::pair{CollectiveOp::kAllReduce, Algorithm::kDirect}}) {
    models::Task t;
    t.id = static_cast<int>(plan.tasks.size());
    t.name = std::string(models::collective_op_name(op));
    t.kind = models::TaskKind::kCollective;
    t.bytes = 64 << 20;
    t.collective = models::Collective{};
    t.collective->op = op;
    t.collective->algorithm = algo;
    plan.tasks.push_back(t);
  }
  auto npu = cluster::load_cluster_profile("npu-1536");
  auto h100 = cluster::load_cluster_profile("h100-1024");
  ASSERT_TRUE(npu.is_ok() && h100.is_ok());
  cluster::ClusterProfile oversubscribed = *npu;
  oversubscribed.name = "npu-1536-3to1";
  oversubscribed.topology.oversubscription = {3.0};
  cluster::ClusterProfile slow_inside = *npu;  // the node's own links are the bottleneck
  slow_inside.name = "npu-1536-slow-intra";
  slow_inside.intra_node.link.bandwidth = 1e8;  // 15/1024 of 64 MiB per device: ~9.8 ms at 0.1 GB/s
  for (const cluster::ClusterProfile* profile : {&*npu, &*h100, &oversubscribed, &slow_inside}) {
    SimOptions o;
    o.workers = 1024;
    o.steps = 1;
    o.warmup_steps = 0;
    o.drain_steps = 0;
    o.auto_fidelity = false;
    o.fidelity = Fidelity::kFlow;
    auto merged = simulate_plan(plan, *profile, o);
    o.group_merge_min_nodes = 1 << 20;
    auto pairs = simulate_plan(plan, *profile, o);
    ASSERT_TRUE(merged.is_ok() && pairs.is_ok()) << merged.status().message() << pairs.status().message();
    for (size_t i = 0; i < plan.tasks.size(); ++i) {
      const double m = merged->tasks[i].max_s, p = pairs->tasks[i].max_s;
      EXPECT_NEAR(m, p, 0.01 * p) << plan.tasks[i].name << " on " << profile->name;
      std::printf("%s on %s at 1024 workers: merged per group %.3f ms, per node pair %.3f ms\n",
                  plan.tasks[i].name.c_str(), profile->name.c_str(), m * 1e3, p * 1e3);
    }
  }
}

}  // namespace
}  // namespace clustertwin::sim
