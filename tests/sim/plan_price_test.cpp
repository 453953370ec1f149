// sim/core/plan_price.h: what is decided before a plan runs. The step counts'
// checks, the seconds of each kind of task, when one worker may stand for its
// node (symmetric_world), and the automatic fidelity's boundary.

#include "sim/core/plan_price.h"

#include <gtest/gtest.h>

#include <regex>

namespace clustertwin::sim {
namespace {

// 2 nodes of 4 devices of 1e15 bf16 FLOP/s; a cost key "dma" for copies.
cluster::ClusterProfile price_profile() {
  cluster::ClusterProfile p;
  p.name = "unit";
  p.nodes = 2;
  p.devices_per_node = 4;
  p.device.name = "G";
  p.device.peak_flops = {{"bf16", 1e15}};
  p.device.memory_bandwidth = 1e12;
  p.host_link = {1e10, 1e-6};
  p.intra_node.link = {1e11, 1e-6};
  p.nics.link = {1e10, 1e-6};
  cluster::CostModel dma;
  dma.latency = 1e-6;
  dma.byte_rate = 1e9;
  p.costs["dma"] = dma;
  return p;
}

// fwd (compute, 1e12 FLOP), h2d (copy, 1e6 bytes), ar (an all-reduce of 1e6 bytes over the world).
models::Plan price_plan_of() {
  models::Plan p;
  p.system = "unit";
  p.variant = "v";
  p.streams = {"compute", "comm"};
  models::Task fwd;
  fwd.id = 0;
  fwd.name = "fwd";
  fwd.flops = 1e12;
  models::Task h2d;
  h2d.id = 1;
  h2d.name = "h2d";
  h2d.kind = models::TaskKind::kCopy;
  h2d.bytes = 1000000;
  h2d.deps = {0};
  models::Task ar;
  ar.id = 2;
  ar.name = "ar";
  ar.kind = models::TaskKind::kCollective;
  ar.stream = 1;
  ar.bytes = 1000000;
  ar.collective = models::Collective{};
  ar.deps = {0};
  p.tasks = {fwd, h2d, ar};
  return p;
}

SimOptions price_options(int workers) {
  SimOptions o;
  o.workers = workers;
  o.steps = 4;
  o.warmup_steps = 1;
  o.drain_steps = 1;
  return o;
}

TEST(PlanPriceTest, EachTaskKindIsPricedOnEveryRank) {
  auto seconds = price_plan(price_plan_of(), price_profile(), price_options(8));
  ASSERT_TRUE(seconds.is_ok()) << seconds.status().message();
  ASSERT_EQ(seconds->size(), 3u);
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_DOUBLE_EQ((*seconds)[0][rank], 1e-3);  // fwd: 1e12 / 1e15 on the roofline
    EXPECT_EQ((*seconds)[1][rank], -1.0);         // h2d: no cost key, moved over the host link
    EXPECT_EQ((*seconds)[2][rank], -1.0);         // ar: no cost key or fit, moved as flows
  }
  models::Plan keyed = price_plan_of();
  keyed.tasks[1].cost_key = "dma";
  auto priced = price_plan(keyed, price_profile(), price_options(8));
  ASSERT_TRUE(priced.is_ok()) << priced.status().message();
  EXPECT_DOUBLE_EQ((*priced)[1][3], 1e-6 + 1e-3);  // dma: 1 us + 1e6 bytes / 1 GB/s
}

// The option's name (a flag's, or the SimOptions field's: issue 46 moves library messages to field
// names), its value and the rule.
void expect_step_error(const SimOptions& o, const std::string& pattern) {
  const Status s = price_plan(price_plan_of(), price_profile(), o).status();
  EXPECT_TRUE(std::regex_match(s.message(), std::regex(pattern))) << s.message();
}

TEST(PlanPriceTest, BadStepCountsNameTheOptionAndValue) {
  SimOptions o = price_options(8);
  o.steps = 0;
  expect_step_error(o, "(--)?steps 0: must be at least 1");
  o = price_options(8);
  o.warmup_steps = 4;
  expect_step_error(o, "(--warmup|warmup_steps) 4: must be in \\[0, steps 4\\)");
  o = price_options(8);
  o.warmup_steps = 2;
  o.drain_steps = 2;
  expect_step_error(o,
                    "(--drain|drain_steps) 2: warm-up plus drain steps must leave at least one of the 4 steps to "
                    "measure");
  o = price_options(8);
  o.drain_steps = -1;
  expect_step_error(o, "(--drain|drain_steps) -1: .*");
}

TEST(PlanPriceTest, ATaskThatCannotBePricedNamesThePlan) {
  models::Plan p = price_plan_of();
  p.tasks[0].dtype = "fp8";
  auto seconds = price_plan(p, price_profile(), price_options(8));
  ASSERT_FALSE(seconds.is_ok());
  EXPECT_NE(seconds.status().message().find("unit/v"), std::string::npos) << seconds.status().message();
  EXPECT_NE(seconds.status().message().find("has no peak for dtype 'fp8'"), std::string::npos)
      << seconds.status().message();
}

TEST(PlanPriceTest, OneWorkerStandsForItsNodeOnlyWhenEveryRankProvablyDoesTheSame) {
  const cluster::ClusterProfile p = price_profile();
  SimOptions o = price_options(8);
  o.symmetric = true;
  auto seconds = price_plan(price_plan_of(), p, o);
  ASSERT_TRUE(seconds.is_ok()) << seconds.status().message();
  EXPECT_TRUE(symmetric_world(price_plan_of(), p, o, *seconds));

  SimOptions off = o;
  off.symmetric = false;
  EXPECT_FALSE(symmetric_world(price_plan_of(), p, off, *seconds));
  SimOptions one_node = o;
  one_node.workers = 4;  // one node: nothing to stand for
  EXPECT_FALSE(symmetric_world(price_plan_of(), p, one_node, *seconds));

  cluster::ClusterProfile straggler = p;
  straggler.slowdown[5] = 2.0;
  EXPECT_FALSE(symmetric_world(price_plan_of(), straggler, o, *seconds));
  cluster::ClusterProfile shared = p;
  shared.node_cores = 8;
  EXPECT_FALSE(symmetric_world(price_plan_of(), shared, o, *seconds));

  std::vector<std::vector<double>> uneven = *seconds;
  uneven[0][6] *= 2;
  EXPECT_FALSE(symmetric_world(price_plan_of(), p, o, uneven));

  // Tasks on whole nodes keep it; a task on part of a node does not.
  models::Plan some_ranks = price_plan_of();
  some_ranks.tasks[0].ranks = {models::RankRange{0, 4}};
  EXPECT_TRUE(symmetric_world(some_ranks, p, o, *seconds));
  some_ranks.tasks[0].ranks = {models::RankRange{0, 2}};
  EXPECT_FALSE(symmetric_world(some_ranks, p, o, *seconds));

  // Groups of whole nodes, or that tile a node, keep it; a block of 3 straddles nodes.
  models::Plan blocks = price_plan_of();
  blocks.tasks[2].collective->group = {models::GroupSpec::Kind::kBlock, 4};
  EXPECT_TRUE(symmetric_world(blocks, p, o, *seconds));
  blocks.tasks[2].collective->group = {models::GroupSpec::Kind::kBlock, 2};
  EXPECT_TRUE(symmetric_world(blocks, p, o, *seconds));
  blocks.tasks[2].collective->group = {models::GroupSpec::Kind::kBlock, 3};
  EXPECT_FALSE(symmetric_world(blocks, p, o, *seconds));
  // Strides: a node apart, or dividing a node, within blocks of whole nodes.
  blocks.tasks[2].collective->group = {models::GroupSpec::Kind::kStride, 2, 8};
  EXPECT_TRUE(symmetric_world(blocks, p, o, *seconds));
  blocks.tasks[2].collective->group = {models::GroupSpec::Kind::kStride, 2, 6};
  EXPECT_FALSE(symmetric_world(blocks, p, o, *seconds));
  blocks.tasks[2].collective->group = {models::GroupSpec::Kind::kStride, 3};
  EXPECT_FALSE(symmetric_world(blocks, p, o, *seconds));
  // A send a node away keeps it; one within a node does not.
  models::Plan sends = price_plan_of();
  sends.tasks[2].collective->op = models::CollectiveOp::kSend;
  sends.tasks[2].collective->peer_offset = 4;
  EXPECT_TRUE(symmetric_world(sends, p, o, *seconds));
  sends.tasks[2].collective->peer_offset = 1;
  EXPECT_FALSE(symmetric_world(sends, p, o, *seconds));
}

TEST(PlanPriceTest, AutomaticFidelityIsStepUpTo64WorkersAndFlowAbove) {
  SimOptions o;
  o.auto_fidelity = true;
  o.workers = kStepFidelityMaxWorkers;
  EXPECT_EQ(resolve_fidelity(o), Fidelity::kStep);
  o.workers = kStepFidelityMaxWorkers + 1;
  EXPECT_EQ(resolve_fidelity(o), Fidelity::kFlow);
  o.auto_fidelity = false;
  o.fidelity = Fidelity::kStep;
  EXPECT_EQ(resolve_fidelity(o), Fidelity::kStep);  // a fidelity asked for is kept
}

}  // namespace
}  // namespace clustertwin::sim
