// Plan execution in the twin: overlap, exposed communication, stragglers,
// topology, determinism and the simulated trace.

#include "sim/core/simulator.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "common/file_io.h"
#include "sim/core/sim_result.h"
#include "tests/sim/sim_test_util.h"
#include "traces/validator.h"

namespace clustertwin::sim {
namespace {

using models::CollectiveOp;
using models::Task;
using models::TaskKind;

// alpha = 2.5 us, beta = 10 GB/s, 4 workers.
cluster::ClusterProfile four_workers() {
  cluster::ClusterProfile p = testing::uniform_switch(4, 10e9, 1e-6, 0.5e-6);
  p.costs["c1"] = cluster::CostModel{10e-3, 0, 0, 0, 0, 0};  // 10 ms
  p.costs["c2"] = cluster::CostModel{5e-3, 0, 0, 0, 0, 0};   // 5 ms
  return p;
}

//   compute |c1 10 ms|c2 5 ms|               |c1 ...
//   comm    |a2a|            |ar (exposed)   |a2a ...
models::Plan overlap_plan() {
  models::Plan plan;
  plan.system = "synthetic";
  plan.variant = "overlap";
  plan.streams = {"compute", "comm"};
  auto task = [&](const char* name, TaskKind kind, int stream) -> Task& {
    Task t;
    t.id = static_cast<int>(plan.tasks.size());
    t.name = name;
    t.kind = kind;
    t.stream = stream;
    plan.tasks.push_back(t);
    return plan.tasks.back();
  };
  Task& c1 = task("c1", TaskKind::kCompute, 0);
  c1.cost_key = "c1";
  c1.flops = 1e12;
  c1.prev_step_deps = {3};
  Task& a2a = task("a2a", TaskKind::kCollective, 1);
  a2a.bytes = 40'000'000;
  a2a.collective = models::Collective{};
  a2a.collective->op = CollectiveOp::kAllToAll;
  Task& c2 = task("c2", TaskKind::kCompute, 0);
  c2.cost_key = "c2";
  c2.deps = {0};
  Task& ar = task("ar", TaskKind::kCollective, 1);
  ar.bytes = 10'000'000;
  ar.collective = models::Collective{};
  ar.collective->algorithm = models::Algorithm::kRing;
  ar.deps = {2};
  return plan;
}

// a2a: alpha + (n-1)/n S / beta = 2.5 us + 0.75 x 40 MB / 10 GB/s = 3.0025 ms
// ar:  2 (n-1) (alpha + S / (n beta)) = 6 x (2.5 us + 250 us) = 1.515 ms
constexpr double kA2a = 3.0025e-3;
constexpr double kAr = 1.515e-3;

TEST(SimulatorTest, OverlapHidesTheAllToAllAndExposesTheAllReduce) {
  SimOptions o;
  o.workers = 4;
  auto r = simulate_plan(overlap_plan(), four_workers(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 15e-3 + kAr, 1e-6);  // c1 + c2, then the all-reduce
  EXPECT_NEAR(r->compute_s, 15e-3, 1e-6);
  EXPECT_NEAR(r->comm_s, kA2a + kAr, 1e-6);
  EXPECT_NEAR(r->exposed_comm_s, kAr, 1e-6);  // the all-to-all runs under c1
  // MFU: 1e12 FLOPs at a 100 TFLOP/s peak is 10 ms of peak work per step.
  EXPECT_NEAR(r->mfu, 10e-3 / (15e-3 + kAr), 1e-4);
  ASSERT_EQ(r->streams.size(), 2u);
  EXPECT_NEAR(r->streams[0].utilization, 15e-3 / (15e-3 + kAr), 1e-4);
  EXPECT_EQ(r->events, 4 * 4 * 6);  // 4 tasks x 4 ranks x 6 steps
}

TEST(SimulatorTest, AStragglerSetsTheStep) {
  cluster::ClusterProfile p = four_workers();
  p.slowdown[1] = 2.0;
  SimOptions o;
  o.workers = 4;
  auto r = simulate_plan(overlap_plan(), p, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 2 * 15e-3 + kAr, 1e-6);  // everyone waits for rank 1 at the all-reduce
}

TEST(SimulatorTest, SameInputsGiveByteIdenticalResultsAndTraces) {
  const std::string t1 = ::testing::TempDir() + "ct_sim_det1.json", t2 = ::testing::TempDir() + "ct_sim_det2.json";
  auto profile = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(profile.is_ok());
  SimOptions o;
  o.workers = 64;
  o.symmetric = false;  // every rank in the trace
  o.trace_out = t1;
  auto a = simulate_plan(overlap_plan(), *profile, o);
  o.trace_out = t2;
  auto b = simulate_plan(overlap_plan(), *profile, o);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << a.status().message() << b.status().message();
  EXPECT_EQ(sim_result_to_json(*a), sim_result_to_json(*b));
  EXPECT_EQ(*read_file(t1), *read_file(t2));
  traces::ValidationStats stats;
  ASSERT_TRUE(traces::validate_trace(t1, &stats).is_ok());
  EXPECT_EQ(stats.events, 4 * 64 * 6);
  EXPECT_EQ(stats.metadata.source, traces::Source::kSim);
}

// Symmetric mode simulates one worker per node; the network still carries
// every member's bytes, so step time, communication and breakdown match the
// full simulation, at both fidelities, with a world all-to-all (with a
// per-peer overhead), a ring all-reduce, an all-to-all in blocks of two
// nodes and a ring all-reduce among the workers 32 apart (2D sparse
// parallelism's replicas: the node's other devices' groups join the
// simulated one's traffic).
TEST(SimulatorTest, SymmetricModeMatchesTheFullSimulation) {
  auto profile = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(profile.is_ok());
  profile->collectives["alltoall"] = cluster::CollectiveFactor{0.5, 100, {}, 3e-6};
  models::Plan plan = overlap_plan();
  Task block = plan.tasks[1];
  block.id = static_cast<int>(plan.tasks.size());
  block.name = "block_a2a";
  block.collective->group = models::GroupSpec{models::GroupSpec::Kind::kBlock, 32};
  block.deps = {1};
  plan.tasks.push_back(block);
  Task replicas = plan.tasks[3];
  replicas.id = static_cast<int>(plan.tasks.size());
  replicas.name = "stride_ar";
  replicas.bytes = 200'000'000;
  replicas.collective->group = models::GroupSpec{models::GroupSpec::Kind::kStride, 32};
  replicas.deps = {block.id};
  plan.tasks.push_back(replicas);
  for (Fidelity fidelity : {Fidelity::kStep, Fidelity::kFlow}) {
    SimOptions o;
    o.workers = 64;
    o.auto_fidelity = false;
    o.fidelity = fidelity;
    o.breakdown = {{"compute", {"c1", "c2"}}, {"other", {""}}};
    auto sym = simulate_plan(plan, *profile, o);
    o.symmetric = false;
    auto full = simulate_plan(plan, *profile, o);
    ASSERT_TRUE(sym.is_ok() && full.is_ok()) << sym.status().message() << full.status().message();
    EXPECT_EQ(sym->simulated_workers, 4);
    EXPECT_EQ(full->simulated_workers, 64);
    EXPECT_NEAR(sym->step_time_s, full->step_time_s, 1e-9 * full->step_time_s);
    EXPECT_NEAR(sym->comm_s, full->comm_s, 1e-9 * full->comm_s);
    EXPECT_NEAR(sym->exposed_comm_s, full->exposed_comm_s, 1e-9 * full->step_time_s);
    ASSERT_EQ(sym->breakdown.size(), 2u);
    EXPECT_NEAR(sym->breakdown[0].exposed_s, full->breakdown[0].exposed_s, 1e-9);
    EXPECT_NEAR(sym->breakdown[1].busy_s, full->breakdown[1].busy_s, 1e-9);
  }
}

// What breaks the symmetry turns the mode off: a straggler, a group that
// splits a node.
TEST(SimulatorTest, SymmetricModeStepsAsideWhenWorkersDiffer) {
  auto profile = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(profile.is_ok());
  SimOptions o;
  o.workers = 32;
  cluster::ClusterProfile slow = *profile;
  slow.slowdown[17] = 1.5;
  auto r = simulate_plan(overlap_plan(), slow, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->simulated_workers, 32);
  models::Plan plan = overlap_plan();
  plan.tasks[1].collective->group = models::GroupSpec{models::GroupSpec::Kind::kBlock, 12};  // straddles nodes
  SimOptions three_nodes = o;
  three_nodes.workers = 48;
  r = simulate_plan(plan, *profile, three_nodes);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->simulated_workers, 48);
  r = simulate_plan(overlap_plan(), *profile, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->simulated_workers, 2);
}

// Blocks that tile a node: one worker stands for its node, the node's other blocks' traffic added to its own,
// and the step is every worker's.
TEST(SimulatorTest, SymmetricModeAddsTheNodesOtherBlocks) {
  auto profile = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(profile.is_ok());
  models::Plan plan = overlap_plan();
  plan.tasks[1].collective->group = models::GroupSpec{models::GroupSpec::Kind::kBlock, 4};
  SimOptions o;
  o.workers = 32;
  auto one = simulate_plan(plan, *profile, o);
  o.symmetric = false;
  auto every = simulate_plan(plan, *profile, o);
  ASSERT_TRUE(one.is_ok() && every.is_ok());
  EXPECT_EQ(one->simulated_workers, 2);
  EXPECT_EQ(every->simulated_workers, 32);
  EXPECT_NEAR(one->step_time_s, every->step_time_s, 1e-9 * every->step_time_s);
}

// A plan of one all-to-all of `bytes` on a comm stream.
models::Plan one_alltoall(int64_t bytes) {
  models::Plan plan;
  plan.streams = {"comm"};
  Task a2a;
  a2a.name = "a2a";
  a2a.kind = TaskKind::kCollective;
  a2a.bytes = bytes;
  a2a.collective = models::Collective{};
  a2a.collective->op = CollectiveOp::kAllToAll;
  plan.tasks = {a2a};
  return plan;
}

// The profile's collective factor multiplies the bytes an op moves: an
// all-to-all of efficiency 0.5 and congestion at 3 peers on 4 workers moves
// (1 + 3/3) / 0.5 = 4 times its bytes.
TEST(SimulatorTest, CollectiveFactorsScaleTheBytesMoved) {
  cluster::ClusterProfile p = four_workers();
  SimOptions o;
  o.workers = 4;
  models::Plan plan = one_alltoall(40'000'000);
  auto plain = simulate_plan(plan, p, o);
  p.collectives["alltoall"] = cluster::CollectiveFactor{0.5, 3, {}};
  auto slowed = simulate_plan(plan, p, o);
  ASSERT_TRUE(plain.is_ok() && slowed.is_ok());
  const double latency = 2.5e-6;
  EXPECT_NEAR(slowed->step_time_s - latency, 4 * (plain->step_time_s - latency), 1e-6);
  // The same bytes as per-destination sizes are scaled alike.
  plan.tasks[0].collective->split_bytes = {10'000'000, 10'000'000, 10'000'000, 10'000'000};
  auto split = simulate_plan(plan, p, o);
  ASSERT_TRUE(split.is_ok()) << split.status().message();
  EXPECT_NEAR(split->step_time_s, slowed->step_time_s, 1e-6);
}

// A per-peer overhead p starts a collective of n members (n - 1) p late,
// whatever its bytes: 3 x 10 us on 4 workers.
TEST(SimulatorTest, PerPeerOverheadDelaysACollectiveByPeersTimesOverhead) {
  cluster::ClusterProfile p = four_workers();
  SimOptions o;
  o.workers = 4;
  models::Plan plan = one_alltoall(40'000'000);
  auto plain = simulate_plan(plan, p, o);
  p.collectives["alltoall"] = cluster::CollectiveFactor{1, 0, {}, 10e-6};
  auto late = simulate_plan(plan, p, o);
  ASSERT_TRUE(plain.is_ok() && late.is_ok());
  EXPECT_NEAR(late->step_time_s - plain->step_time_s, 3 * 10e-6, 1e-9);
  EXPECT_DOUBLE_EQ(p.collectives["alltoall"].peer_seconds(1536), 1535 * 10e-6);
}

// One compute task (cost key `compute_key`) then an all-to-all of `bytes`
// (cost key "a2a") that waits for it, on two streams; one step, all measured.
models::Plan compute_then_a2a(const std::string& compute_key, int64_t bytes) {
  models::Plan plan;
  plan.streams = {"compute", "comm"};
  Task c;
  c.name = "c";
  c.kind = TaskKind::kCompute;
  c.cost_key = compute_key;
  Task a2a;
  a2a.id = 1;
  a2a.name = "a2a";
  a2a.kind = TaskKind::kCollective;
  a2a.stream = 1;
  a2a.cost_key = "a2a";
  a2a.bytes = bytes;
  a2a.collective = models::Collective{};
  a2a.collective->op = CollectiveOp::kAllToAll;
  a2a.deps = {0};
  plan.tasks = {c, a2a};
  return plan;
}

SimOptions one_step(int workers) {
  SimOptions o;
  o.workers = workers;
  o.warmup_steps = 0;
  o.drain_steps = 0;
  o.steps = 1;
  return o;
}

// A collective whose cost key the profile prices (a measured collective, as
// `clustertwin validate` fits one) takes that time once every member has
// arrived, instead of moving its bytes: a straggler's 10 ms before it delays
// everyone, then 7 ms.
TEST(SimulatorTest, ACollectiveWithACostKeyTakesItsMeasuredTime) {
  cluster::ClusterProfile p = four_workers();
  p.slowdown[2] = 2.0;
  p.costs["a2a"] = cluster::CostModel{7e-3, 0, 0, 0, 0, 0};
  auto r = simulate_plan(compute_then_a2a("c2", 40'000'000), p, one_step(4));  // c2: 5 ms, 10 ms on the straggler
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 10e-3 + 7e-3, 1e-9);
}

// localhost-cpu's 4 ranks share 2 cores (node_cores): 4 x 5 ms of compute
// takes 10 ms, a collective priced by its cost key is each member's 7 ms of
// CPU work, 14 ms on 2 cores; with 4 cores, or none shared, 5 + 7 ms. A
// collective priced by a fitted network is wall time, not CPU work.
TEST(SimulatorTest, RanksSharingCoresTimeShareThem) {
  auto base = cluster::load_cluster_profile("localhost-cpu");
  ASSERT_TRUE(base.is_ok());
  ASSERT_EQ(base->node_cores, 2);
  base->costs["c"] = cluster::CostModel{5e-3, 0, 0, 0, 0, 0};
  base->costs["a2a"] = cluster::CostModel{7e-3, 0, 0, 0, 0, 0};
  const models::Plan plan = compute_then_a2a("c", 1 << 20);
  const SimOptions o = one_step(4);
  auto step = [&](const cluster::ClusterProfile& p) {
    auto r = simulate_plan(plan, p, o);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return r.is_ok() ? r->step_time_s : -1;
  };
  EXPECT_NEAR(step(*base), 10e-3 + 14e-3, 1e-9);
  cluster::ClusterProfile four = *base;
  four.node_cores = 4;
  EXPECT_NEAR(step(four), 5e-3 + 7e-3, 1e-9);
  cluster::ClusterProfile none = *base;
  none.node_cores = 0;
  EXPECT_NEAR(step(none), 5e-3 + 7e-3, 1e-9);
  // The fitted network: 3 latency steps x 1 ms + 2^20 x 3/4 bytes at 1 GB/s, whatever the cores.
  cluster::ClusterProfile fitted = *base;
  fitted.costs.erase("a2a");
  fitted.collectives["alltoall"].fit = {{0, 1e-3, 1e9}};
  EXPECT_NEAR(step(fitted), 10e-3 + 3e-3 + (1 << 20) * 0.75 / 1e9, 1e-9);
}

// On shared cores a collective priced by its cost key first waits for the operating system, once per
// latency step at the ranks on the node (collectives.OP.step_wait), then runs its members' CPU work: the
// all-to-all of RanksSharingCoresTimeShareThem among 4 (3 latency steps) waits 3 x 2 ms (the wait measured
// at 4 ranks), then 14 ms; among 2 on the same profile, 1 x 0.5 ms (measured at 2), then 7 ms; among 3,
// halfway between the two measured waits: 2 x 1.25 ms, then 3 x 7 ms on 2 cores.
TEST(SimulatorTest, ACollectiveOnSharedCoresWaitsPerLatencyStepAtTheRanksOnTheNode) {
  auto p = cluster::load_cluster_profile("localhost-cpu");
  ASSERT_TRUE(p.is_ok());
  p->costs["c"] = cluster::CostModel{5e-3, 0, 0, 0, 0, 0};
  p->costs["a2a"] = cluster::CostModel{7e-3, 0, 0, 0, 0, 0};
  p->collectives["alltoall"].step_wait = {{2, 0.5e-3}, {4, 2e-3}};
  const models::Plan plan = compute_then_a2a("c", 1 << 20);
  auto step = [&](int workers) {
    auto r = simulate_plan(plan, *p, one_step(workers));
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return r.is_ok() ? r->step_time_s : -1;
  };
  EXPECT_NEAR(step(4), 10e-3 + 3 * 2e-3 + 14e-3, 1e-9);
  EXPECT_NEAR(step(2), 5e-3 + 1 * 0.5e-3 + 7e-3, 1e-9);
  EXPECT_NEAR(step(3), 7.5e-3 + 2 * 1.25e-3 + 10.5e-3, 1e-9);
  // A key's own wait (calibrate's, per cost key) comes before its op's, at any rank count: 3 x 1 ms at 4.
  p->costs["a2a"].step_wait = 1e-3;
  EXPECT_NEAR(step(4), 10e-3 + 3 * 1e-3 + 14e-3, 1e-9);
  EXPECT_NEAR(step(2), 5e-3 + 1 * 1e-3 + 7e-3, 1e-9);
  // Without shared cores there is no such wait.
  p->node_cores = 0;
  EXPECT_NEAR(step(4), 5e-3 + 7e-3, 1e-9);
}

// Ring all-reduce across 32 nodes: a non-blocking fat tree (4 leaves of 8
// nodes) against one switch with the same NICs. The ring crosses leaves only
// between neighbours, so the fat tree adds two switch hops of latency to a
// few rounds and nothing to the bandwidth.
TEST(SimulatorTest, NonBlockingFatTreeMatchesASingleSwitch) {
  auto tree = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(tree.is_ok());
  cluster::ClusterProfile one_switch = *tree;
  one_switch.topology = cluster::Topology();
  one_switch.topology.switch_link.latency = tree->topology.switch_link.latency;
  for (Fidelity fidelity : {Fidelity::kFlow}) {
    SimOptions o;
    o.workers = 512;
    o.steps = 1;
    o.warmup_steps = 0;
    o.drain_steps = 0;
    o.auto_fidelity = false;
    o.fidelity = fidelity;
    models::Plan plan;
    plan.system = "collectives";
    plan.variant = "ring";
    plan.streams = {"comm"};
    Task ar;
    ar.name = "ar";
    ar.kind = TaskKind::kCollective;
    ar.bytes = 256 << 20;
    ar.collective = models::Collective{};
    ar.collective->algorithm = models::Algorithm::kRing;
    plan.tasks.push_back(ar);
    auto t = simulate_plan(plan, *tree, o);
    auto s = simulate_plan(plan, one_switch, o);
    ASSERT_TRUE(t.is_ok() && s.is_ok()) << t.status().message() << s.status().message();
    EXPECT_NEAR(t->tasks[0].max_s, s->tasks[0].max_s, 0.05 * s->tasks[0].max_s);
    std::printf("ring all-reduce of 256 MiB on 512 workers: fat tree %.3f ms, single switch %.3f ms\n",
                t->tasks[0].max_s * 1e3, s->tasks[0].max_s * 1e3);
  }
}

TEST(SimulatorTest, RejectsAWorkerCountThatSplitsANode) {
  auto profile = cluster::load_cluster_profile("npu-1536");
  SimOptions o;
  o.workers = 100;
  auto r = simulate_plan(overlap_plan(), *profile, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().exit_code(), 2);
  EXPECT_NE(r.status().message().find("workers 100: not a multiple of devices_per_node 16"), std::string::npos)
      << r.status().message();
}

TEST(SimulatorTest, RejectsHostWorkWithoutACost) {
  models::Plan plan = overlap_plan();
  plan.tasks[2].kind = TaskKind::kHost;
  plan.tasks[2].cost_key = "nope";
  SimOptions o;
  o.workers = 4;
  auto r = simulate_plan(plan, four_workers(), o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("task 'c2': host work has no roofline; cost key 'nope' is not in the costs of "
                                      "profile 'uniform-switch'"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace clustertwin::sim

namespace clustertwin::sim {
namespace {

TEST(SimulateManyTest, ParallelSweepGivesTheSameResultsInOrder) {
  const models::Plan plan = overlap_plan();
  const cluster::ClusterProfile profile = four_workers();
  std::vector<SimJob> jobs;
  for (int workers : {4, 2, 3, 1}) {
    SimOptions o;
    o.workers = workers;
    jobs.push_back({&plan, &profile, o});
  }
  const auto parallel = simulate_many(jobs, 2);
  ASSERT_EQ(parallel.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto alone = simulate_plan(plan, profile, jobs[i].options);
    ASSERT_TRUE(alone.is_ok() && parallel[i].is_ok());
    EXPECT_EQ(sim_result_to_json(*parallel[i]), sim_result_to_json(*alone)) << "job " << i;
    EXPECT_EQ(parallel[i]->workers, jobs[i].options.workers);
  }
}

}  // namespace
}  // namespace clustertwin::sim
