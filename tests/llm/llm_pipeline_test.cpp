// The LLM step plan (models/llm/llm_plan.h) run in sim/core: on a network
// that costs nothing, a pipeline of equal stages takes the 1F1B closed form,
// (M + P - 1) x (forward + backward), its bubble (P - 1) / (M + P - 1) of the
// step; GPipe the same; a pure data-parallel step is its compute and then
// the gradients' all-reduce, as sim/core prices that collective alone.

#include <gtest/gtest.h>

#include <cmath>

#include "models/llm/llm_plan.h"
#include "sim/core/simulator.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::models::llm {
namespace {

using transformer::Transformer;

constexpr double kForward = 0.010, kBackward = 0.020;

// A tiny model: its messages are bytes on a network of 1e18 B/s without latency.
Transformer tiny() {
  return Transformer{64, 4, 0, 0, 8, 8, 512, false};
}

// `world` single-device nodes on one switch, and every compute key of `split` priced kForward / kBackward.
cluster::ClusterProfile profile_for(const Split& split, int world, double bandwidth) {
  cluster::ClusterProfile p = sim::testing::uniform_switch(world, bandwidth, 0, 0);
  p.intra_node.link = {bandwidth, 0};
  for (const auto& [key, seconds] : step_costs(tiny(), split, transformer::DeviceRates{})) {
    const bool backward = key.find("backward") != std::string::npos;
    const bool optimizer = key.find("optimizer") != std::string::npos;
    p.costs[key].latency = optimizer ? 0 : backward ? kBackward : kForward;
  }
  return p;
}

double step_seconds(const Split& split, const cluster::ClusterProfile& profile) {
  sim::SimOptions options;
  options.workers = split.tp * split.pp * split.dp;
  options.steps = 4;
  options.warmup_steps = 1;
  options.drain_steps = 0;
  auto result = sim::simulate_plan(step_plan(tiny(), split), profile, options);
  EXPECT_TRUE(result.is_ok()) << result.status().message();
  return result.is_ok() ? result->step_time_s : 0;
}

TEST(LlmPipelineTest, OneFOneBOnEqualStagesTakesTheBubbleClosedForm) {
  for (int pp : {2, 4}) {
    for (int64_t m : {4, 8}) {
      Split s;
      s.pp = pp;
      s.global_batch = m;
      const double step = step_seconds(s, profile_for(s, pp, 1e18));
      EXPECT_NEAR(step, (m + pp - 1) * (kForward + kBackward), 1e-6) << "pp " << pp << ", " << m << " micro-batches";
      const double bubble = 1 - m * (kForward + kBackward) / step;
      EXPECT_NEAR(bubble, (pp - 1.0) / (m + pp - 1), 1e-6);
      s.schedule = Schedule::kGpipe;
      EXPECT_NEAR(step_seconds(s, profile_for(s, pp, 1e18)), (m + pp - 1) * (kForward + kBackward), 1e-6);
    }
  }
}

TEST(LlmPipelineTest, APureDataParallelStepIsItsComputeThenTheGradientAllReduce) {
  Split s;
  s.dp = 4;
  s.global_batch = 8;  // 2 micro-batches per replica
  s.overlap_grad_reduce = false;
  const double bandwidth = 1e9;  // the all-reduce takes milliseconds
  const cluster::ClusterProfile profile = profile_for(s, 4, bandwidth);
  // The same all-reduce alone, as a one-task plan of the same profile.
  Plan alone;
  alone.streams = {"dp"};
  Task reduce;
  reduce.name = "reduce";
  reduce.kind = TaskKind::kCollective;
  reduce.bytes = std::llround(4.0 * (8 * static_cast<double>(transformer::layer_parameters(tiny())) +
                                     static_cast<double>(transformer::embedding_parameters(tiny()))));
  reduce.collective =
      Collective{CollectiveOp::kAllReduce, GroupSpec{GroupSpec::Kind::kStride, 1, 4}, Algorithm::kAuto, 0, 0, 0, {}};
  alone.tasks = {reduce};
  sim::SimOptions options;
  options.workers = 4;
  options.steps = 3;
  options.warmup_steps = 1;
  options.drain_steps = 0;
  auto reduce_only = sim::simulate_plan(alone, profile, options);
  ASSERT_TRUE(reduce_only.is_ok()) << reduce_only.status().message();
  EXPECT_GT(reduce_only->step_time_s, 1e-3);
  EXPECT_NEAR(step_seconds(s, profile), 2 * (kForward + kBackward) + reduce_only->step_time_s, 1e-9);
}

}  // namespace
}  // namespace clustertwin::models::llm
