// A one-worker step with data parallelism added (models/plan/data_parallel.h)
// in the twin: free on one worker, and on more the gradient buckets overlap
// the backward until the last one, which the optimizer waits for.

#include <gtest/gtest.h>

#include "models/plan/data_parallel.h"
#include "sim/core/simulator.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::sim {
namespace {

using models::Task;

// alpha = 2 x 1 us + 0.5 us = 2.5 us, beta = 10 GB/s, up to 8 workers.
cluster::ClusterProfile eight_workers() {
  cluster::ClusterProfile p = testing::uniform_switch(8, 10e9, 1e-6, 0.5e-6);
  p.costs["fwd"] = cluster::CostModel{8e-3, 0, 0, 0, 0, 0};  // 8 ms
  p.costs["bwd"] = cluster::CostModel{2e-3, 0, 0, 0, 0, 0};  // 2 ms
  p.costs["opt"] = cluster::CostModel{1e-3, 0, 0, 0, 0, 0};  // 1 ms
  return p;
}

//   compute  |fwd 8 ms|bwd 2|bwd 2|bwd 2|bwd 2|      |opt 1|
//   dp                      |ar0| |ar1| |ar2| |ar3   |        one 10 MB bucket per backward task
models::Plan one_gpu_step() {
  models::Plan plan;
  plan.system = "test";
  plan.variant = "one-gpu";
  plan.streams = {"compute"};
  auto task = [&](const std::string& name, const std::string& cost_key, int64_t grad_bytes) {
    Task t;
    t.id = static_cast<int>(plan.tasks.size());
    t.name = name;
    t.cost_key = cost_key;
    t.grad_bytes = grad_bytes;
    plan.tasks.push_back(t);
  };
  task("fwd", "fwd", 0);
  for (int i = 4; i >= 1; --i)
    task("bwd" + std::to_string(i), "bwd", 10'000'000);
  task("opt", "opt", 0);
  return plan;
}

// A ring all-reduce of S = 10 MB among n: 2 (n - 1) (alpha + S / (n beta)).
double ring_allreduce_s(int n) {
  return 2 * (n - 1) * (2.5e-6 + 10e6 / (n * 10e9));
}

TEST(DataParallelTwinTest, OneWorkerRunsTheStepAsBefore) {
  models::DataParallelOptions dp;
  dp.bucket_bytes = 10'000'000;
  auto with_dp = models::add_data_parallel(one_gpu_step(), dp, "step");
  ASSERT_TRUE(with_dp.is_ok()) << with_dp.status().message();
  SimOptions o;
  o.workers = 1;
  auto before = simulate_plan(one_gpu_step(), eight_workers(), o);
  ASSERT_TRUE(before.is_ok()) << before.status().message();
  auto after = simulate_plan(*with_dp, eight_workers(), o);
  ASSERT_TRUE(after.is_ok()) << after.status().message();
  // An all-reduce among one rank moves nothing and takes no time: fwd + 4 bwd + opt = 8 + 8 + 1 ms either way.
  EXPECT_NEAR(before->step_time_s, 17e-3, 1e-9);
  EXPECT_DOUBLE_EQ(after->step_time_s, before->step_time_s);
  EXPECT_DOUBLE_EQ(after->comm_s, 0);
}

TEST(DataParallelTwinTest, TheStepGrowsByTheLastBucketAndTheOthersHide) {
  models::DataParallelOptions dp;
  dp.bucket_bytes = 10'000'000;
  auto with_dp = models::add_data_parallel(one_gpu_step(), dp, "step");
  ASSERT_TRUE(with_dp.is_ok()) << with_dp.status().message();
  double previous = 17e-3;
  for (int n : {2, 4, 8}) {
    SimOptions o;
    o.workers = n;
    auto r = simulate_plan(*with_dp, eight_workers(), o);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    const double ar = ring_allreduce_s(n);  // 1.005 ms at 2, 1.515 at 4, 1.785 at 8: each under a 2 ms bwd
    // Buckets 0-2 run under the next backward task; bucket 3 starts when the backward ends (16 ms) and the
    // optimizer (1 ms) waits for it: 17 ms + one all-reduce.
    EXPECT_NEAR(r->step_time_s, 17e-3 + ar, 1e-6) << n << " workers";
    EXPECT_NEAR(r->comm_s, 4 * ar, 1e-6) << n << " workers";
    EXPECT_NEAR(r->exposed_comm_s, ar, 1e-6) << n << " workers";
    EXPECT_GT(r->step_time_s, previous) << n << " workers";
    previous = r->step_time_s;
  }
}

}  // namespace
}  // namespace clustertwin::sim
