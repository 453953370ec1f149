// A recorded run's step time and samples (calibrators/recorded_run.h, task_fit.h): a stalled step is left out
// of both, a heavy-tailed run keeps its slow steps, and a collective of one member is fitted and priced as the
// local copy it is.

#include "calibrators/recorded_run.h"

#include <gtest/gtest.h>

#include <vector>

#include "calibrators/replay.h"
#include "models/plan/task_event.h"
#include "sim/core/simulator.h"

namespace clustertwin::calibrators {
namespace {

using models::Task;
using models::TaskKind;

Task task(int id, const std::string& name, TaskKind kind, int stream) {
  Task t;
  t.id = id;
  t.name = name;
  t.kind = kind;
  t.stream = stream;
  t.cost_key = name;
  return t;
}

// One rank, one stream: each step one compute task "c" of `step_ms[s]` milliseconds, back to back.
RecordedRun compute_run(const std::vector<double>& step_ms) {
  RecordedRun run;
  run.path = "run.json";
  run.metadata.world_size = 1;
  run.plan.streams = {"compute"};
  run.plan.tasks.push_back(task(0, "c", TaskKind::kCompute, 0));
  run.runner_steps = static_cast<int>(step_ms.size());
  double t = 0;
  for (int s = 0; s < run.runner_steps; ++s) {
    run.events.push_back(models::task_event(run.plan.tasks[0], 0, 0, s, t, t + step_ms[s] * 1e3, 0));
    t += step_ms[s] * 1e3;
  }
  return run;
}

// Steady 10 ms steps around a 40 ms one (4x the median, its deviation far beyond 20 of the steps' 0.1 ms):
// that step and the next are left out, so the measured step is the steady ones' mean, and the fit sees only
// their tasks.
TEST(RecordedRunTest, AStalledStepAndTheOneAfterItAreLeftOut) {
  std::vector<double> ms = {10, 10.1, 9.9, 10, 10.1, 40, 10, 9.9, 10.1, 10, 10};
  const RecordedRun run = compute_run(ms);
  EXPECT_EQ(stalled_steps(run, 1, 10), (std::set<int>{5, 6}));
  // Steps 1..10 without 5 and 6: (10.1 + 9.9 + 10 + 10.1 + 9.9 + 10.1 + 10 + 10) / 8 ms.
  auto step = recorded_step_time(run, 1, 10);
  ASSERT_TRUE(step.is_ok()) << step.status().message();
  EXPECT_NEAR(*step, 80.1e-3 / 8, 1e-12);
  const auto samples = task_samples(run, 1, 10);
  EXPECT_EQ(samples.size(), 8u);
  for (const TaskSample& s : samples)
    EXPECT_LT(s.seconds, 11e-3);
}

// Ranks time-sharing cores are slow now and then as part of the workload: steps spread widely (5-24 ms
// around 10), so a 24 ms one, 2.4x the median, lies within 20 deviations of it and stays.
TEST(RecordedRunTest, AHeavyTailedRunKeepsItsSlowSteps) {
  std::vector<double> ms = {10, 6, 14, 9, 24, 11, 5, 13, 10, 8, 12};
  const RecordedRun run = compute_run(ms);
  EXPECT_TRUE(stalled_steps(run, 1, 10).empty());
  auto step = recorded_step_time(run, 1, 10);
  ASSERT_TRUE(step.is_ok());
  EXPECT_NEAR(*step, (6 + 14 + 9 + 24 + 11 + 5 + 13 + 10 + 8 + 12) * 1e-3 / 10, 1e-12);
  // Fewer than three measured steps: no median to judge by.
  EXPECT_TRUE(stalled_steps(compute_run({10, 10, 40}), 1, 2).empty());
}

// A one-rank run's all-to-all (a group of one: NCCL and Gloo copy the buffer to itself) took 26 ms a step
// after a 4 ms compute task. Its fit is a plain cost of its bytes, not a latency per step and bus byte (both
// 0 for a group of one), and the twin replays the step: 4 + 26 ms.
TEST(RecordedRunTest, AOneMemberCollectiveIsPricedAsItsLocalCopy) {
  RecordedRun run;
  run.path = "one.json";
  run.metadata.world_size = 1;
  run.plan.streams = {"compute", "comm"};
  run.plan.tasks.push_back(task(0, "c", TaskKind::kCompute, 0));
  Task a2a = task(1, "a2a", TaskKind::kCollective, 1);
  a2a.bytes = 1 << 20;
  a2a.collective = models::Collective{};
  a2a.collective->op = models::CollectiveOp::kAllToAll;
  a2a.deps = {0};
  run.plan.tasks.push_back(a2a);
  run.plan.tasks[0].prev_step_deps = {1};
  run.runner_steps = 8;
  double t = 0;
  for (int s = 0; s < run.runner_steps; ++s) {
    run.events.push_back(models::task_event(run.plan.tasks[0], 0, 0, s, t, t + 4e3, 0));
    run.events.push_back(models::task_event(run.plan.tasks[1], 0, 1, s, t + 4e3, t + 30e3, 1));
    t += 30e3;
  }
  const auto fits = fit_key_durations(run, 2, 6);
  ASSERT_EQ(fits.size(), 2u);
  const KeyFit& f = fits[0].cost_key == "a2a" ? fits[0] : fits[1];
  EXPECT_FALSE(f.collective);
  EXPECT_NEAR(f.seconds_per_unit * (1 << 20), 26e-3, 1e-12);  // all of it per byte: one size
  cluster::ClusterProfile base;
  base.nodes = 1;
  base.devices_per_node = 1;
  base.device.name = "d";
  base.device.peak_flops["bf16"] = 1e15;
  base.device.memory_bytes = 1e9;
  base.device.memory_bandwidth = 1e12;
  base.host_link.bandwidth = 1e10;
  base.host_memory_bandwidth = 1e10;
  base.topology.kind = cluster::Topology::Kind::kSingleSwitch;
  const cluster::ClusterProfile p = profile_with_fits(base, fits);
  EXPECT_NEAR(p.costs.at("a2a").collective_seconds(models::CollectiveOp::kAllToAll, 1 << 20, 1, 0), 26e-3, 1e-12);
  sim::SimOptions o;
  o.workers = 1;
  o.steps = 4;
  o.warmup_steps = 1;
  o.drain_steps = 0;
  auto twin = sim::simulate_plan(run.plan, p, o);
  ASSERT_TRUE(twin.is_ok()) << twin.status().message();
  EXPECT_NEAR(twin->step_time_s, 30e-3, 1e-9);
  // Without a cost: a group of one copies its 1 MiB on the device, read and written at 1 TB/s; an all-reduce
  // (in place, as c10d calls it) costs nothing.
  cluster::ClusterProfile bare = base;
  bare.costs["c"].latency = 4e-3;
  auto copy = sim::simulate_plan(run.plan, bare, o);
  ASSERT_TRUE(copy.is_ok()) << copy.status().message();
  EXPECT_NEAR(copy->step_time_s, 4e-3 + 2.0 * (1 << 20) / 1e12, 1e-12);
  models::Plan in_place = run.plan;
  in_place.tasks[1].collective->op = models::CollectiveOp::kAllReduce;
  auto none = sim::simulate_plan(in_place, bare, o);
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  EXPECT_NEAR(none->step_time_s, 4e-3, 1e-12);
}

}  // namespace
}  // namespace clustertwin::calibrators
