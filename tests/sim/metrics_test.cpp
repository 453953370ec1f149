// sim/core/metrics.h: a run's per-step figures from its events, on a
// hand-made run of two ranks whose every figure is worked out below.

#include "sim/core/metrics.h"

#include <gtest/gtest.h>

namespace clustertwin::sim {
namespace {

traces::Event metrics_event(traces::Category category, int64_t rank, int64_t stream, double from_s, double to_s,
                            int64_t step, int64_t task, const std::string& cost_key, double flops = 0) {
  traces::Event e;
  e.category = category;
  e.rank = rank;
  e.stream = stream;
  e.ts_us = from_s * 1e6;
  e.dur_us = (to_s - from_s) * 1e6;
  e.step = step;
  e.task_id = task;
  e.cost_key = cost_key;
  if (flops > 0) e.flops = flops;
  return e;
}

// Four steps ending at 1, 2, 3 and 4 s; one warm-up and one drain step: the
// measured window is [1 s, 3 s], two steps, so step_time = (3 - 1) / 2 = 1 s.
// Per step and rank, every busy time is divided by 2 steps x 2 ranks = 4.
//
//   rank 0  stream 0  compute [0.5, 1.5] step 0 | compute [2.0, 2.5] step 1
//           stream 1                              comm [2.25, 3.5] step 2
//   rank 1  stream 0  compute [1.0, 2.0] step 1
SimResult measured() {
  models::Plan plan;
  plan.streams = {"compute", "comm"};
  plan.tasks.resize(2);
  plan.tasks[0].name = "fwd";
  plan.tasks[1].name = "allreduce";
  const auto C = traces::Category::kCompute;
  const std::vector<traces::Event> events = {
      metrics_event(C, 0, 0, 0.5, 1.5, 0, 0, "fwd", 1e12),
      metrics_event(C, 0, 0, 2.0, 2.5, 1, 0, "fwd", 1e12),
      metrics_event(traces::Category::kComm, 0, 1, 2.25, 3.5, 2, 1, "ar"),
      metrics_event(C, 1, 0, 1.0, 2.0, 1, 0, "fwd", 1e12),
  };
  SimResult r;
  r.steps = 4;
  r.warmup_steps = 1;
  r.drain_steps = 1;
  r.workers = 2;
  r.step_end_s = {1, 2, 3, 4};
  const std::vector<BreakdownLayer> layers = {{"dense", {"fwd"}}, {"network", {"ar"}}};
  compute_metrics(
      plan, events, [](const traces::Event&) { return 1e13; }, layers, &r);
  return r;
}

TEST(MetricsTest, StepTimeIsTheMeasuredWindowOverItsSteps) {
  EXPECT_DOUBLE_EQ(measured().step_time_s, 1.0);
}

TEST(MetricsTest, BusyTimesAreClippedToTheWindowAndAveragedPerStepAndRank) {
  const SimResult r = measured();
  // compute: rank 0 [1, 1.5] (clipped) + [2, 2.5], rank 1 [1, 2]: 2 s / 4.
  EXPECT_DOUBLE_EQ(r.compute_s, 0.5);
  // comm: [2.25, 3] (clipped at the window's end): 0.75 s / 4.
  EXPECT_DOUBLE_EQ(r.comm_s, 0.1875);
  // exposed: the comm minus its overlap with rank 0's compute [2, 2.5]: (0.75 - 0.25) / 4.
  EXPECT_DOUBLE_EQ(r.exposed_comm_s, 0.125);
}

TEST(MetricsTest, MfuCountsTheMeasuredStepsComputeFlops) {
  // Steps 1 and 2 only: two events of 1e12 FLOP on a 1e13 FLOP/s peak, 0.1 s each;
  // 0.2 s / 4 per step and rank, over a 1 s step.
  EXPECT_DOUBLE_EQ(measured().mfu, 0.05);
}

TEST(MetricsTest, StreamsAndLayersAreBusyTimesAndLayersExposeWhatEarlierOnesDoNotCover) {
  const SimResult r = measured();
  ASSERT_EQ(r.streams.size(), 2u);
  EXPECT_EQ(r.streams[0].stream, "compute");
  EXPECT_DOUBLE_EQ(r.streams[0].busy_s, 0.5);
  EXPECT_DOUBLE_EQ(r.streams[0].utilization, 0.5);
  EXPECT_DOUBLE_EQ(r.streams[1].busy_s, 0.1875);
  ASSERT_EQ(r.breakdown.size(), 2u);
  EXPECT_EQ(r.breakdown[0].name, "dense");
  EXPECT_DOUBLE_EQ(r.breakdown[0].busy_s, 0.5);
  EXPECT_DOUBLE_EQ(r.breakdown[0].exposed_s, 0.5);  // the first layer: nothing earlier covers it
  EXPECT_DOUBLE_EQ(r.breakdown[1].busy_s, 0.1875);
  EXPECT_DOUBLE_EQ(r.breakdown[1].exposed_s, 0.125);
}

TEST(MetricsTest, TaskTimesAreWholeDurationsOfTheMeasuredStepsEvents) {
  const SimResult r = measured();
  ASSERT_EQ(r.tasks.size(), 2u);
  // fwd: steps 1's 0.5 s and 1 s (step 0's event is warm-up): mean 0.75, max 1.
  EXPECT_EQ(r.tasks[0].name, "fwd");
  EXPECT_DOUBLE_EQ(r.tasks[0].mean_s, 0.75);
  EXPECT_DOUBLE_EQ(r.tasks[0].max_s, 1.0);
  // allreduce: its whole 1.25 s, not the part inside the window.
  EXPECT_DOUBLE_EQ(r.tasks[1].mean_s, 1.25);
  EXPECT_DOUBLE_EQ(r.tasks[1].max_s, 1.25);
}

TEST(MetricsTest, WithoutWarmUpTheWindowStartsAtZero) {
  models::Plan plan;
  plan.streams = {"compute"};
  plan.tasks.resize(1);
  SimResult r;
  r.steps = 2;
  r.step_end_s = {2, 5};
  const std::vector<traces::Event> events = {metrics_event(traces::Category::kCompute, 0, 0, 0, 1, 0, 0, "")};
  compute_metrics(
      plan, events, [](const traces::Event&) { return 0.0; }, {}, &r);
  // (5 - 0) / 2 steps; 1 s of compute over 2 steps and 1 rank; no peak: no MFU.
  EXPECT_DOUBLE_EQ(r.step_time_s, 2.5);
  EXPECT_DOUBLE_EQ(r.compute_s, 0.5);
  EXPECT_DOUBLE_EQ(r.mfu, 0.0);
}

}  // namespace
}  // namespace clustertwin::sim
