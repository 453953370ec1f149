// sim/core/task_cost.h: a task's nominal seconds, by its cost key when the
// profile has one, else by the roofline of its kind; each missing piece is an
// error naming the task and the profile.

#include "sim/core/task_cost.h"

#include <gtest/gtest.h>

namespace clustertwin::sim {
namespace {

cluster::DeviceType cost_gpu() {
  cluster::DeviceType d;
  d.name = "G";
  d.peak_flops = {{"bf16", 1e15}, {"fp32", 1e14}};
  d.memory_bandwidth = 2e12;
  d.compute_efficiency = 0.5;
  d.memory_efficiency = 0.8;
  return d;
}

cluster::ClusterProfile cost_profile() {
  cluster::ClusterProfile p;
  p.name = "unit";
  p.devices_per_node = 4;
  p.host_memory_bandwidth = 100e9;
  cluster::CostModel fwd;
  fwd.latency = 1e-5;
  fwd.per_request = 2e-6;
  fwd.flop_rate = 1e12;
  fwd.byte_rate = 1e9;
  p.costs["fwd"] = fwd;
  return p;
}

models::Task cost_task(models::TaskKind kind, double flops, int64_t bytes, std::string cost_key = "") {
  models::Task t;
  t.name = "t";
  t.kind = kind;
  t.flops = flops;
  t.bytes = bytes;
  t.cost_key = std::move(cost_key);
  return t;
}

double cost_seconds(const models::Task& t) {
  auto s = task_seconds(t, cost_gpu(), cost_profile());
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? *s : -1;
}

TEST(TaskCostTest, ACostKeyPricesEveryTermAndWinsOverTheRoofline) {
  models::Task t = cost_task(models::TaskKind::kCompute, 2e9, 3000000, "fwd");
  t.requests = 5;
  // latency + requests x per_request + flops / flop_rate + bytes / byte_rate
  //   = 10 us + 5 x 2 us + 2e9 / 1e12 + 3e6 / 1e9 = 10 us + 10 us + 2 ms + 3 ms
  EXPECT_DOUBLE_EQ(cost_seconds(t), 1e-5 + 1e-5 + 2e-3 + 3e-3);
  // Even a host task, which has no roofline, is priced by its key.
  EXPECT_DOUBLE_EQ(cost_seconds(cost_task(models::TaskKind::kHost, 0, 0, "fwd")), 1e-5);
}

TEST(TaskCostTest, ComputeIsTheSlowerOfFlopsAndBytesOnTheRoofline) {
  // flops: 1e12 / (1e15 bf16 peak x 0.5) = 2 ms; bytes: 1.6e9 / (2e12 x 0.8) = 1 ms.
  EXPECT_DOUBLE_EQ(cost_seconds(cost_task(models::TaskKind::kCompute, 1e12, 1600000000)), 2e-3);
  // bytes: 8e9 / 1.6e12 = 5 ms, now the larger.
  EXPECT_DOUBLE_EQ(cost_seconds(cost_task(models::TaskKind::kCompute, 1e12, 8000000000)), 5e-3);
  // The task's dtype picks the peak: 1e12 / (1e14 fp32 x 0.5) = 20 ms.
  models::Task fp32 = cost_task(models::TaskKind::kCompute, 1e12, 0);
  fp32.dtype = "fp32";
  EXPECT_DOUBLE_EQ(cost_seconds(fp32), 2e-2);
  // A cost key the profile lacks falls back to the roofline.
  EXPECT_DOUBLE_EQ(cost_seconds(cost_task(models::TaskKind::kCompute, 1e12, 0, "unknown")), 2e-3);
}

TEST(TaskCostTest, ALookupReadsHostMemorySharedByTheNodesDevices) {
  // 1e9 bytes / (100 GB/s / 4 devices) = 40 ms.
  EXPECT_DOUBLE_EQ(cost_seconds(cost_task(models::TaskKind::kLookup, 0, 1000000000)), 4e-2);
  EXPECT_DOUBLE_EQ(cost_seconds(cost_task(models::TaskKind::kLookup, 0, 0)), 0.0);
}

TEST(TaskCostTest, EachMissingPieceIsAnErrorNamingTheTaskAndProfile) {
  cluster::ClusterProfile no_host = cost_profile();
  no_host.host_memory_bandwidth = 0;
  auto lookup = task_seconds(cost_task(models::TaskKind::kLookup, 0, 10), cost_gpu(), no_host);
  ASSERT_FALSE(lookup.is_ok());
  EXPECT_EQ(lookup.status().message(),
            "task 't': a lookup without a cost key needs host_memory_bandwidth in profile 'unit'");

  models::Task fp8 = cost_task(models::TaskKind::kCompute, 1, 0);
  fp8.dtype = "fp8";
  auto compute = task_seconds(fp8, cost_gpu(), cost_profile());
  ASSERT_FALSE(compute.is_ok());
  EXPECT_EQ(compute.status().message(), "task 't': device 'G' of profile 'unit' has no peak for dtype 'fp8'");

  auto host = task_seconds(cost_task(models::TaskKind::kHost, 0, 0, "cpu_work"), cost_gpu(), cost_profile());
  ASSERT_FALSE(host.is_ok());
  EXPECT_EQ(host.status().message(),
            "task 't': host work has no roofline; cost key 'cpu_work' is not in the costs of profile 'unit'");

  auto copy = task_seconds(cost_task(models::TaskKind::kCopy, 0, 10), cost_gpu(), cost_profile());
  ASSERT_FALSE(copy.is_ok());
  EXPECT_EQ(copy.status().code(), Status::Code::kInternal);
}

}  // namespace
}  // namespace clustertwin::sim
