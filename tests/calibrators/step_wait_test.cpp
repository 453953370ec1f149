// A collective's wait per latency step on shared cores (calibrators/step_wait.h): measured per rank count
// from a benchmark's smallest messages, and taken out of recorded collectives before their keys are fitted.

#include "calibrators/step_wait.h"

#include <gtest/gtest.h>

namespace clustertwin::calibrators {
namespace {

using models::CollectiveOp;

// An all-to-all benchmark at one rank count whose time is `wait` per latency step up to 64 KiB and grows by
// 10 ns a byte beyond (a kink no one line fits within the 3% tolerance), 10 samples per size, +-1%.
void add_alltoall(int n, double wait, std::vector<CollectiveSample>* out) {
  for (int64_t bytes = 4096; bytes <= (16 << 20); bytes *= 2) {
    const double steps = n - 1;
    const double seconds = steps * wait + (bytes > 65536 ? (bytes - 65536) * 1e-8 : 0.0);
    for (int i = 0; i < 10; ++i)
      out->push_back({CollectiveOp::kAllToAll, n, bytes, seconds * (i % 2 ? 1.01 : 0.99)});
  }
}

TEST(StepWaitTest, EachRankCountsWaitIsItsSmallestMessagesTimePerLatencyStep) {
  std::vector<CollectiveSample> samples;
  add_alltoall(2, 0.3e-3, &samples);
  add_alltoall(4, 0.75e-3, &samples);
  const auto waits = measure_step_waits(samples, NetworkFitOptions{});
  ASSERT_EQ(waits.size(), 1u);
  const std::map<int, double>& a2a = waits.at(CollectiveOp::kAllToAll);
  ASSERT_EQ(a2a.size(), 2u);
  EXPECT_NEAR(a2a.at(2), 0.3e-3, 1e-12);
  EXPECT_NEAR(a2a.at(4), 0.75e-3, 1e-12);
}

// From a run's own collectives: per cost key, the time off the CPU once every member was there (met_s; else the
// whole time) over the latency steps, pooled over the samples (sum over sum); a sample without a CPU time or
// latency steps (a group of one), or a task that is not a collective, adds nothing.
TEST(StepWaitTest, ARunsWaitIsEachKeysTimeOffTheCpuPerLatencyStepOnceItsMembersMet) {
  std::vector<TaskSample> samples = {
      {"ar", 3e-3, 1e5, false, 2, CollectiveOp::kAllReduce, 2, 0, 0.4e-3},  // 2.6 ms off the CPU, 2 steps
      {"ar", 5e-3, 1e5, false, 2, CollectiveOp::kAllReduce, 2, 0, 0.6e-3},  // 4.4 ms, 2 steps
      {"a2a", 2e-3, 1e5, false, 1, CollectiveOp::kAllToAll, 2, 0, 2.5e-3},  // more CPU than time: 0
      {"a2a", 4e-3, 1e5, false, 1, CollectiveOp::kAllToAll, 2, 0, 1e-3},    // 3 ms, 1 step
      {"nocpu", 7e-3, 1e5, false, 1, CollectiveOp::kAllToAll, 2},           // no CPU time recorded
      {"one", 7e-3, 1e5, false, 0, CollectiveOp::kAllToAll, 1, 0, 1e-3},    // a group of one: no latency step
      {"gemm", 2e-3, 1e9, true, 0, {}, 2, 0, 1.9e-3},
  };
  // 9 ms, of which the members waited 6 ms for each other: 3 ms once they met, 1 of it on the CPU, 2 steps.
  samples.push_back({"met", 9e-3, 1e5, false, 2, CollectiveOp::kAllReduce, 2, 0, 1e-3, 3e-3});
  const auto waits = measure_run_key_waits(samples);
  ASSERT_EQ(waits.size(), 3u);
  EXPECT_NEAR(waits.at("ar"), (2.6e-3 + 4.4e-3) / 4, 1e-15);
  EXPECT_NEAR(waits.at("a2a"), 3e-3 / 2, 1e-15);
  EXPECT_NEAR(waits.at("met"), 2e-3 / 2, 1e-15);
}

// The default: a profile whose ranks share cores and that has no wait yet takes the runs' own, per key; one
// with cores per device, or with a wait already (a calibrated base), is left as it is.
TEST(StepWaitTest, RunWaitsByDefaultOnlyOnSharedCoresWithoutWaits) {
  const std::vector<TaskSample> samples = {{"ar", 3e-3, 1e5, false, 2, CollectiveOp::kAllReduce, 2, 0, 1e-3}};
  cluster::ClusterProfile shared;
  shared.devices_per_node = 4;
  shared.node_cores = 2;
  ASSERT_TRUE(add_run_step_waits_by_default(samples, &shared));
  EXPECT_NEAR(shared.costs.at("ar").step_wait, 1e-3, 1e-15);
  EXPECT_TRUE(shared.collectives.empty());
  cluster::ClusterProfile own_cores;
  EXPECT_FALSE(add_run_step_waits_by_default(samples, &own_cores));
  EXPECT_TRUE(own_cores.costs.empty());
  cluster::ClusterProfile calibrated;
  calibrated.node_cores = 2;
  calibrated.collectives["alltoall"].step_wait = {{4, 0.7e-3}};
  EXPECT_FALSE(add_run_step_waits_by_default(samples, &calibrated));
  EXPECT_EQ(calibrated.costs.count("ar"), 0u);
  cluster::ClusterProfile keyed;
  keyed.node_cores = 2;
  keyed.costs["x"].step_wait = 1e-3;
  EXPECT_FALSE(add_run_step_waits_by_default(samples, &keyed));
  cluster::ClusterProfile no_cpu;
  no_cpu.node_cores = 2;
  EXPECT_FALSE(add_run_step_waits_by_default({{"ar", 3e-3, 1e5, false, 2, CollectiveOp::kAllReduce, 2}}, &no_cpu));
}

// A run's collective sample loses its latency steps x the wait at its ranks on the node; a profile without
// shared cores, a task that is not a collective, or an op without waits keep theirs.
TEST(StepWaitTest, RecordedCollectivesLoseTheirWaitBeforeTheFit) {
  cluster::ClusterProfile p;
  p.devices_per_node = 4;
  p.node_cores = 2;
  p.collectives["allreduce"].step_wait = {{2, 0.6e-3}, {4, 0.9e-3}};
  std::vector<TaskSample> samples = {
      {"ar", 10e-3, 1e5, false, 6, CollectiveOp::kAllReduce, 4},    // 6 steps x 0.9 ms
      {"ar2", 3e-3, 1e5, false, 2, CollectiveOp::kAllReduce, 2},    // 2 x 0.6 ms
      {"ar8", 20e-3, 1e5, false, 14, CollectiveOp::kAllReduce, 8},  // 8 ranks, 4 on a node: 14 x 0.9 ms
      {"tiny", 1e-3, 1e5, false, 6, CollectiveOp::kAllReduce, 4},   // never below 0
      {"a2a", 5e-3, 1e5, false, 3, CollectiveOp::kAllToAll, 4},     // no waits for all-to-all
      {"gemm", 2e-3, 1e9, true, 0, {}, 4},
  };
  std::vector<TaskSample> none = samples;
  cluster::ClusterProfile own_cores = p;
  own_cores.node_cores = 0;
  remove_step_waits(own_cores, &none);
  for (size_t i = 0; i < samples.size(); ++i)
    EXPECT_EQ(none[i].seconds, samples[i].seconds);
  // A key's own wait comes before its op's.
  cluster::ClusterProfile keyed = p;
  keyed.costs["ar2"].step_wait = 0.2e-3;
  std::vector<TaskSample> by_key = samples;
  remove_step_waits(keyed, &by_key);
  EXPECT_NEAR(by_key[1].seconds, 3e-3 - 0.4e-3, 1e-15);
  EXPECT_NEAR(by_key[0].seconds, 10e-3 - 5.4e-3, 1e-15);
  remove_step_waits(p, &samples);
  EXPECT_NEAR(samples[0].seconds, 10e-3 - 5.4e-3, 1e-15);
  EXPECT_NEAR(samples[0].wait_s, 5.4e-3, 1e-15);
  EXPECT_NEAR(samples[1].seconds, 3e-3 - 1.2e-3, 1e-15);
  EXPECT_NEAR(samples[2].seconds, 20e-3 - 12.6e-3, 1e-15);
  EXPECT_EQ(samples[3].seconds, 0);
  EXPECT_EQ(samples[3].wait_s, 1e-3);
  EXPECT_EQ(samples[4].seconds, 5e-3);
  EXPECT_EQ(samples[5].seconds, 2e-3);
}

}  // namespace
}  // namespace clustertwin::calibrators
