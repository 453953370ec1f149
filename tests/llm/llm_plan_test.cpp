// models/llm/llm_plan.h: the schedules' orders and the step plan's tasks,
// groups and messages.

#include "models/llm/llm_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

#include "models/plan/plan_validator.h"

namespace clustertwin::models::llm {
namespace {

using transformer::Transformer;

Split split(int tp, int pp, int dp, int64_t micro_batches_per_pipeline) {
  Split s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.micro_batch = 1;
  s.global_batch = micro_batches_per_pipeline * dp;
  return s;
}

std::string text(const std::vector<PipelineOp>& order) {
  std::string out;
  for (const PipelineOp& op : order)
    out += (out.empty() ? "" : " ") + std::string(op.forward ? "F" : "B") + std::to_string(op.micro_batch);
  return out;
}

TEST(LlmPlanTest, OneFOneBWarmsUpWithTheStagesBehindThenAlternates) {
  const Split s = split(1, 4, 1, 6);
  EXPECT_EQ(text(stage_order(s, 0)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(text(stage_order(s, 2)), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  EXPECT_EQ(text(stage_order(s, 3)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  Split gpipe = s;
  gpipe.schedule = Schedule::kGpipe;
  EXPECT_EQ(text(stage_order(gpipe, 3)), "F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5");
}

TEST(LlmPlanTest, InterleavedRunsEachChunksPassesOnceForwardsFirst) {
  Split s = split(1, 2, 1, 4);
  s.schedule = Schedule::kInterleaved;
  s.virtual_stages = 2;
  for (int stage = 0; stage < 2; ++stage) {
    const std::vector<PipelineOp> order = stage_order(s, stage);
    ASSERT_EQ(order.size(), 16u);
    std::set<std::tuple<bool, int, int64_t>> seen;
    std::set<std::pair<int, int64_t>> forwarded;
    for (const PipelineOp& op : order) {
      EXPECT_TRUE(seen.insert({op.forward, op.chunk, op.micro_batch}).second) << "twice: " << text({op});
      if (op.forward) forwarded.insert({op.chunk, op.micro_batch});
      if (!op.forward) {
        EXPECT_TRUE(forwarded.count({op.chunk, op.micro_batch})) << "backward before forward";
      }
    }
  }
  // Megatron-LM's order: micro-batches in groups of PP, chunk by chunk; stage 0 warms up with (PP - 1) x 2 + PP.
  const std::vector<PipelineOp> first = stage_order(s, 0);
  EXPECT_EQ(first[0], (PipelineOp{true, 0, 0}));
  EXPECT_EQ(first[2], (PipelineOp{true, 1, 0}));
  EXPECT_EQ(first[4], (PipelineOp{true, 0, 2}));
  EXPECT_EQ(first[5], (PipelineOp{false, 1, 0}));  // the first backward: the last chunk's
}

TEST(LlmPlanTest, ThePlanIsValidForItsWorldAndMovesWhatTheSplitSays) {
  const Transformer m{1024, 16, 0, 0, 8, 512, 51200, false};
  Split s = split(2, 2, 2, 4);
  s.overlap_grad_reduce = false;
  const Plan plan = step_plan(m, s);
  ASSERT_TRUE(validate_plan_for_world(plan, "llm", 8, 8).is_ok())
      << validate_plan_for_world(plan, "llm", 8, 8).message();
  int sends = 0, recvs = 0, tensor = 0, data = 0;
  for (const Task& t : plan.tasks) {
    if (!t.collective) continue;
    const Collective& c = *t.collective;
    if (c.op == CollectiveOp::kSend) ++sends;
    if (c.op == CollectiveOp::kRecv) ++recvs;
    if (c.op == CollectiveOp::kSend || c.op == CollectiveOp::kRecv) {
      EXPECT_EQ(t.bytes, 2 * 512 * 1024 / 2) << t.name;  // micro_batch x seq x hidden bf16 over TP
    } else if (c.group.kind == GroupSpec::Kind::kBlock) {
      ++tensor;
      EXPECT_EQ(c.group.size, 2);
    } else {
      ++data;
      EXPECT_EQ(c.group, (GroupSpec{GroupSpec::Kind::kStride, 2, 4})) << t.name;  // every TP-th rank of a stage
      // fp32 gradients of 4 layers over TP 2, with the token and position embeddings on stage 0 and the LM
      // head's copy of the token embedding on stage 1.
      const double embedding = t.name.rfind("s0 ", 0) == 0 ? (51200 + 512) * 1024.0 : 51200 * 1024.0;
      EXPECT_EQ(t.bytes, std::llround(4.0 * (4.0 * transformer::layer_parameters(m) + embedding) / 2)) << t.name;
    }
  }
  EXPECT_EQ(sends, 2 * 4);  // stage 0's activations and stage 1's gradients, 4 micro-batches
  EXPECT_EQ(recvs, 2 * 4);
  EXPECT_EQ(tensor, 2 * 2 * 4);  // after every pass of both stages
  EXPECT_EQ(data, 2);            // one reduction per stage
}

TEST(LlmPlanTest, OverlapSplitsTheLastBackwardIntoBucketsEachReducedWhenDone) {
  const Transformer m{1024, 16, 0, 0, 8, 1024, 51200, false};
  Split s = split(1, 1, 8, 2);
  const int buckets = gradient_buckets(m, s);
  EXPECT_EQ(buckets, 3);  // 8 layers of 12.6M parameters in buckets of 40M parameters
  const Plan plan = step_plan(m, s);
  ASSERT_TRUE(validate_plan_for_world(plan, "llm", 8, 8).is_ok());
  int reductions = 0;
  for (const Task& t : plan.tasks) {
    if (t.collective && t.collective->op == CollectiveOp::kAllReduce) {
      ++reductions;
      ASSERT_EQ(t.deps.size(), 1u);
      EXPECT_EQ(plan.tasks[t.deps[0]].cost_key, "llm/backward_head_bucket") << t.name;
    }
  }
  EXPECT_EQ(reductions, buckets);
  transformer::DeviceRates device;
  device.peak_flops = 1e15;
  device.memory_bandwidth = 2e12;
  const auto costs = step_costs(m, s, device);
  EXPECT_DOUBLE_EQ(costs.at("llm/backward_head_bucket") * buckets, costs.at("llm/backward_head"));
}

}  // namespace
}  // namespace clustertwin::models::llm
