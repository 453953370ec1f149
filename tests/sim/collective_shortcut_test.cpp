// Collectives priced once where one collective at a time has the fabric
// (SimOptions::collective_shortcut, sim/core/collective_shortcut.h): when
// the shortcut applies, and that it gives what moving every collective as
// flows gives, at both fidelities, on small and medium worlds.

#include "sim/core/collective_shortcut.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/core/plan_run.h"
#include "sim/core/simulator.h"
#include "sim/nestpipe/nestpipe_twin.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

using models::CollectiveOp;
using models::Task;
using models::TaskKind;

Task& add_task(models::Plan* plan, const std::string& name, TaskKind kind, int stream, std::vector<int> deps) {
  Task t;
  t.id = static_cast<int>(plan->tasks.size());
  t.name = name;
  t.kind = kind;
  t.stream = stream;
  t.deps = std::move(deps);
  plan->tasks.push_back(t);
  return plan->tasks.back();
}

Task& add_collective(models::Plan* plan, const std::string& name, CollectiveOp op, models::Algorithm algorithm,
                     int64_t bytes, int stream, std::vector<int> deps) {
  Task& t = add_task(plan, name, TaskKind::kCollective, stream, std::move(deps));
  t.bytes = bytes;
  t.collective = models::Collective{};
  t.collective->op = op;
  t.collective->algorithm = algorithm;
  return t;
}

// A data-parallel step with the exchanges of a recommender: forward compute,
// an all-to-all, more compute, a ring all-reduce of the gradients, another
// all-to-all of a different size, a tree all-reduce, and the optimizer. The
// collectives run on a stream of their own, all over the world, so that they
// never overlap each other but do overlap compute; the next step's first
// compute waits for the optimizer only.
models::Plan one_comm_stream_plan() {
  models::Plan plan;
  plan.system = "shortcut";
  plan.variant = "one-comm-stream";
  plan.streams = {"compute", "comm"};
  add_task(&plan, "fwd", TaskKind::kCompute, 0, {}).flops = 2e9;
  add_collective(&plan, "a2a_fwd", CollectiveOp::kAllToAll, models::Algorithm::kDirect, 8 << 20, 1, {0});
  add_task(&plan, "bwd", TaskKind::kCompute, 0, {0}).flops = 4e9;
  add_collective(&plan, "grads_ring", CollectiveOp::kAllReduce, models::Algorithm::kRing, 16 << 20, 1, {2});
  add_collective(&plan, "a2a_bwd", CollectiveOp::kAllToAll, models::Algorithm::kDirect, 3 << 20, 1, {1, 2});
  add_collective(&plan, "grads_tree", CollectiveOp::kAllReduce, models::Algorithm::kTree, 1 << 20, 1, {2});
  add_task(&plan, "optimizer", TaskKind::kCompute, 0, {3, 4, 5}).flops = 1e9;
  plan.tasks[0].prev_step_deps = {6};
  return plan;
}

// The same all-reduces on two streams with no order between them: the two
// run at the same time and share every link.
models::Plan two_comm_streams_plan() {
  models::Plan plan;
  plan.system = "shortcut";
  plan.variant = "two-comm-streams";
  plan.streams = {"compute", "comm", "comm2"};
  add_task(&plan, "fwd", TaskKind::kCompute, 0, {}).flops = 1e9;
  add_collective(&plan, "ar_a", CollectiveOp::kAllReduce, models::Algorithm::kRing, 16 << 20, 1, {0});
  add_collective(&plan, "ar_b", CollectiveOp::kAllReduce, models::Algorithm::kRing, 16 << 20, 2, {0});
  return plan;
}

SimOptions options_for(int workers, Fidelity fidelity, int steps) {
  SimOptions o;
  o.workers = workers;
  o.steps = steps;
  o.warmup_steps = 1;
  o.drain_steps = 0;
  o.auto_fidelity = false;
  o.fidelity = fidelity;
  return o;
}

// Relative agreement within 1e-9: the priced collective ends at start +
// (the first one's end - its start), computed at another clock value, so the
// two differ in rounding only.
void expect_same_results(const models::Plan& plan, const SimResult& priced, const SimResult& flows,
                         const std::string& where) {
  ASSERT_EQ(priced.step_end_s.size(), flows.step_end_s.size()) << where;
  for (size_t s = 0; s < flows.step_end_s.size(); ++s)
    EXPECT_NEAR(priced.step_end_s[s], flows.step_end_s[s], 1e-9 * flows.step_end_s[s]) << where << " step " << s;
  EXPECT_NEAR(priced.comm_s, flows.comm_s, 1e-9 * flows.comm_s) << where;
  EXPECT_NEAR(priced.exposed_comm_s, flows.exposed_comm_s, 1e-9 * std::max(flows.comm_s, 1e-12)) << where;
  ASSERT_EQ(priced.tasks.size(), flows.tasks.size()) << where;
  for (size_t t = 0; t < flows.tasks.size(); ++t) {
    EXPECT_NEAR(priced.tasks[t].mean_s, flows.tasks[t].mean_s, 1e-9 * flows.tasks[t].mean_s)
        << where << " " << plan.tasks[t].name;
    EXPECT_NEAR(priced.tasks[t].max_s, flows.tasks[t].max_s, 1e-9 * flows.tasks[t].max_s)
        << where << " " << plan.tasks[t].name;
  }
  EXPECT_EQ(priced.events, flows.events) << where;
}

TEST(ExclusiveNetworkTest, WorldCollectivesOnOneStream) {
  const models::Plan plan = one_comm_stream_plan();
  SimOptions o = options_for(16, Fidelity::kFlow, 2);
  auto seconds = price_plan(plan, testing::uniform_switch(16, 25e9, 1e-6, 0.5e-6), o);
  ASSERT_TRUE(seconds.is_ok()) << seconds.status().message();
  EXPECT_TRUE(exclusive_network(plan, o, 1, *seconds));
  o.collective_shortcut = false;
  EXPECT_FALSE(exclusive_network(plan, o, 1, *seconds));
}

TEST(ExclusiveNetworkTest, NotWhereTwoCollectivesMayOverlap) {
  const cluster::ClusterProfile profile = testing::uniform_switch(16, 25e9, 1e-6, 0.5e-6);
  const SimOptions o = options_for(16, Fidelity::kFlow, 2);
  auto check = [&](const models::Plan& plan, const std::string& why) {
    auto seconds = price_plan(plan, profile, o);
    ASSERT_TRUE(seconds.is_ok()) << seconds.status().message();
    EXPECT_FALSE(exclusive_network(plan, o, 1, *seconds)) << why;
  };
  check(two_comm_streams_plan(), "collectives on two streams");
  models::Plan blocks = one_comm_stream_plan();
  blocks.tasks[3].collective->group = {models::GroupSpec::Kind::kBlock, 8};
  check(blocks, "blocks of 8 of 16 ranks run side by side");
  models::Plan subset = one_comm_stream_plan();
  subset.tasks[1].ranks = {{0, 8}};
  subset.tasks[1].collective->group = {models::GroupSpec::Kind::kBlock, 8};
  check(subset, "a collective on some ranks only");
  models::Plan p2p = one_comm_stream_plan();
  Task& send = add_collective(&p2p, "send", CollectiveOp::kSend, models::Algorithm::kAuto, 1 << 20, 1, {});
  send.collective->peer_offset = 1;
  send.ranks = {{0, 1}};
  Task& recv = add_collective(&p2p, "recv", CollectiveOp::kRecv, models::Algorithm::kAuto, 1 << 20, 1, {});
  recv.collective->peer_offset = -1;
  recv.ranks = {{1, 2}};
  check(p2p, "send/recv pairs of different ranks run side by side");
}

TEST(ExclusiveNetworkTest, CollectivesPricedByCostKeysMoveNoFlows) {
  // ar_b, priced by its key, is a wait on its stream: ar_a has the fabric to itself.
  models::Plan plan = two_comm_streams_plan();
  plan.tasks[2].cost_key = "ar_b";
  cluster::ClusterProfile profile = testing::uniform_switch(16, 25e9, 1e-6, 0.5e-6);
  profile.costs["ar_b"].latency = 1e-3;
  const SimOptions o = options_for(16, Fidelity::kFlow, 2);
  auto seconds = price_plan(plan, profile, o);
  ASSERT_TRUE(seconds.is_ok()) << seconds.status().message();
  EXPECT_TRUE(exclusive_network(plan, o, 1, *seconds));
}

// Profiles the shortcut is held on: one switch; and a fat tree oversubscribed
// 2:1 and 3:1 with 4 devices and 2 NICs per node, where a collective's own
// flows share a bottleneck (alone on the fabric, it still takes the same time
// every time it runs, so the shortcut applies there too): testing::oversubscribed_fat_tree.
class ShortcutAgreementTest
    : public ::testing::TestWithParam<std::tuple<std::string, cluster::ClusterProfile, int, Fidelity>> {};

TEST_P(ShortcutAgreementTest, SameAsEveryCollectiveAsFlows) {
  const auto& [name, profile, workers, fidelity] = GetParam();
  const models::Plan plan = one_comm_stream_plan();
  SimOptions o = options_for(workers, fidelity, 3);
  auto priced = simulate_plan(plan, profile, o);
  o.collective_shortcut = false;
  auto flows = simulate_plan(plan, profile, o);
  ASSERT_TRUE(priced.is_ok()) << priced.status().message();
  ASSERT_TRUE(flows.is_ok()) << flows.status().message();
  // 4 collectives a step, 3 steps: the first step's are simulated, the other 8 priced (the two all-to-alls differ in
  // size, so neither prices the other).
  EXPECT_EQ(priced->collectives_priced_once, 8);
  EXPECT_EQ(flows->collectives_priced_once, 0);
  expect_same_results(plan, *priced, *flows, name);
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, ShortcutAgreementTest,
    ::testing::Values(
        std::tuple{"switch_16_step", testing::uniform_switch(16, 25e9, 1e-6, 0.5e-6), 16, Fidelity::kStep},
        std::tuple{"switch_16_flow", testing::uniform_switch(16, 25e9, 1e-6, 0.5e-6), 16, Fidelity::kFlow},
        std::tuple{"fat_tree_32_step", testing::oversubscribed_fat_tree(), 32, Fidelity::kStep},
        std::tuple{"fat_tree_32_flow", testing::oversubscribed_fat_tree(), 32, Fidelity::kFlow},
        std::tuple{"switch_256_flow", testing::uniform_switch(256, 25e9, 1e-6, 0.5e-6), 256, Fidelity::kFlow}),
    [](const auto& info) { return std::get<0>(info.param); });

// NestPipe's plans (every collective over the world on the comm stream), at
// both fidelities, with and without symmetric mode, on the cluster the
// planner sizes (npu-1536, its costs as sim nestpipe adds them).
class NestPipeShortcutTest : public ::testing::TestWithParam<std::tuple<int, Fidelity, bool>> {};

TEST_P(NestPipeShortcutTest, SameAsEveryCollectiveAsFlows) {
  const auto& [workers, fidelity, symmetric] = GetParam();
  auto profile = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  nestpipe::add_nestpipe_default_costs(&*profile);
  nestpipe::NestPipeSetup setup;
  setup.micro_batches = 4;
  auto plan = nestpipe::nestpipe_plan(setup, models::nestpipe::Variant::kNestPipe, workers);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  SimOptions o = nestpipe::nestpipe_sim_options();
  o.workers = workers;
  o.steps = 4;
  o.warmup_steps = 1;
  o.drain_steps = 1;
  o.auto_fidelity = false;
  o.fidelity = fidelity;
  o.symmetric = symmetric;
  auto priced = simulate_plan(*plan, *profile, o);
  o.collective_shortcut = false;
  auto flows = simulate_plan(*plan, *profile, o);
  ASSERT_TRUE(priced.is_ok()) << priced.status().message();
  ASSERT_TRUE(flows.is_ok()) << flows.status().message();
  EXPECT_GT(priced->collectives_priced_once, 0);
  EXPECT_EQ(flows->collectives_priced_once, 0);
  expect_same_results(*plan, *priced, *flows, std::to_string(workers) + " workers");
}

INSTANTIATE_TEST_SUITE_P(Worlds, NestPipeShortcutTest,
                         ::testing::Values(std::tuple{16, Fidelity::kStep, false},
                                           std::tuple{32, Fidelity::kStep, true},
                                           std::tuple{32, Fidelity::kFlow, false},
                                           std::tuple{256, Fidelity::kFlow, true}),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "_" +
                                  std::string(fidelity_name(std::get<1>(info.param))) +
                                  (std::get<2>(info.param) ? "_symmetric" : "_full");
                         });

// Where two collectives share the fabric the shortcut does not apply, and
// must not: each of two concurrent all-reduces takes longer than one alone,
// so a price taken from one alone would be wrong.
TEST(ShortcutFallbackTest, OverlappingCollectivesStayFlows) {
  const cluster::ClusterProfile profile = testing::uniform_switch(16, 25e9, 1e-6, 0.5e-6);
  const models::Plan plan = two_comm_streams_plan();
  SimOptions o = options_for(16, Fidelity::kFlow, 2);
  auto shared = simulate_plan(plan, profile, o);
  ASSERT_TRUE(shared.is_ok()) << shared.status().message();
  EXPECT_EQ(shared->collectives_priced_once, 0);
  o.collective_shortcut = false;
  auto flows = simulate_plan(plan, profile, o);
  ASSERT_TRUE(flows.is_ok()) << flows.status().message();
  EXPECT_EQ(shared->step_end_s, flows->step_end_s);  // the same run, not merely close

  models::Plan alone = plan;
  alone.tasks.pop_back();
  o.collective_shortcut = true;
  auto one = simulate_plan(alone, profile, o);
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  // Ring all-reduce of S = 16 MiB over 16 ranks: 30 rounds of S/16 through each NIC; two at once halve each
  // flow's bandwidth, so each takes nearly twice as long (the latencies are not shared).
  EXPECT_GT(shared->tasks[1].mean_s, 1.8 * one->tasks[1].mean_s);
}

}  // namespace
}  // namespace clustertwin::sim
