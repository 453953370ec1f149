// The GPU node of the twin's machine model (cluster::HostSide, Task::launches and Task::sync): a host thread
// launches device work at the host's launch cost and goes on; the device runs each task once launched and
// its dependencies are done. The closed forms of the issue: a launch-bound step (the host's launches), a
// copy-bound step (bytes over the host link), a device-bound step that runs past the host's (the step is the
// device's, the host runs ahead across steps), a sync point, and a collective of one member.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/file_io.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim {
namespace {

using models::Task;
using models::TaskKind;

// One node, one device, a host of 16 cores whose launches cost 8 us; kernels priced by their cost keys.
cluster::ClusterProfile gpu_node() {
  auto p = cluster::load_cluster_profile("h200-1gpu");
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->host.cores, 16);
  EXPECT_DOUBLE_EQ(p->host.launch, 8e-6);
  return *p;
}

Task kernel(int id, const std::string& name, int stream, const std::string& key) {
  Task t;
  t.id = id;
  t.name = name;
  t.kind = TaskKind::kCompute;
  t.stream = stream;
  t.cost_key = key;
  t.launches = 1;
  return t;
}

SimOptions steps(int n) {
  SimOptions o;
  o.workers = 1;
  o.steps = n;
  o.warmup_steps = 2;
  o.drain_steps = 1;
  return o;
}

// Ten 2 us kernels a step, each launched for 8 us: the device waits for the host, the step is the launches'
// 10 x 8 us.
TEST(GpuNodeTest, ALaunchBoundStepIsTheHostsLaunches) {
  cluster::ClusterProfile p = gpu_node();
  p.costs["tiny"].latency = 2e-6;
  models::Plan plan;
  plan.streams = {"compute"};
  for (int i = 0; i < 10; ++i)
    plan.tasks.push_back(kernel(i, "k" + std::to_string(i), 0, "tiny"));
  auto r = simulate_plan(plan, p, steps(6));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 10 * 8e-6, 1e-12);
  // Launches that cost nothing leave the device's 10 x 2 us.
  p.host.launch = 0;
  auto free = simulate_plan(plan, p, steps(6));
  ASSERT_TRUE(free.is_ok());
  EXPECT_NEAR(free->step_time_s, 10 * 2e-6, 1e-12);
}

// A 55.4 MB host-to-device copy a step over the 55.4 GB/s host link (h200-1gpu's measured PCIe), launched in
// 8 us: the step is the copy's 1 ms.
TEST(GpuNodeTest, ACopyBoundStepIsItsBytesOverTheHostLink) {
  const cluster::ClusterProfile p = gpu_node();
  models::Plan plan;
  plan.streams = {"copy"};
  Task copy = kernel(0, "h2d", 0, "");
  copy.kind = TaskKind::kCopy;
  copy.bytes = 55'400'000;
  plan.tasks.push_back(copy);
  auto r = simulate_plan(plan, p, steps(6));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 55.4e6 / 55.4e9, 1e-9);
}

// A host stream with 100 us of host work a step, and a 1 ms kernel a step that waits for nothing: the host is
// done with each step long before the device, whose step it is; the device runs behind, its kernels launched
// steps ahead (step 4's kernel is launched at 4 x 8 us and runs from 8 us + 4 ms). Made a sync point, the host
// waits for each kernel: 8 us of launch, then 1 ms.
TEST(GpuNodeTest, ADeviceBoundStepRunsPastTheHostAndTheHostRunsAhead) {
  cluster::ClusterProfile p = gpu_node();
  p.costs["marker"].latency = 100e-6;
  p.costs["big"].latency = 1e-3;
  models::Plan plan;
  plan.streams = {"host", "compute"};
  Task marker = kernel(0, "marker", 0, "marker");
  marker.kind = TaskKind::kHost;
  marker.launches = 0;
  plan.tasks.push_back(marker);
  plan.tasks.push_back(kernel(1, "k", 1, "big"));
  const std::string trace = ::testing::TempDir() + "ct_gpu_node_trace.json";
  SimOptions o = steps(6);
  o.trace_out = trace;
  auto r = simulate_plan(plan, p, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 1e-3, 1e-12);
  auto text = read_file(trace);
  ASSERT_TRUE(text.is_ok());
  const auto j = nlohmann::json::parse(*text);
  std::map<std::pair<std::string, int>, nlohmann::json> args;
  std::map<std::pair<std::string, int>, double> start, end;
  for (const auto& e : j.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    const auto key = std::make_pair(e.at("name").get<std::string>(), e.at("args").at("step").get<int>());
    args[key] = e.at("args");
    start[key] = e.at("ts").get<double>();
    end[key] = start[key] + e.at("dur").get<double>();
  }
  EXPECT_NEAR(end.at({"marker", 4}), 5 * 100.0, 1e-6);    // the host's step 4 ends at 0.5 ms (us in the trace)
  EXPECT_NEAR(start.at({"k", 4}), 8 + 4 * 1000.0, 1e-6);  // its kernel: after the first launch's 8 us, 4 before
  EXPECT_NEAR(args.at({"k", 4}).at("host_ts_us").get<double>(), 4 * 8.0, 1e-6);
  EXPECT_NEAR(args.at({"k", 4}).at("host_dur_us").get<double>(), 8.0, 1e-6);
  plan.tasks[1].sync = true;
  auto synced = simulate_plan(plan, p, steps(6));
  ASSERT_TRUE(synced.is_ok());
  EXPECT_NEAR(synced->step_time_s, 8e-6 + 1e-3, 1e-12);
}

// On a stream whose other tasks are launched, a task that launches nothing (host work the thread runs, a task
// of the executors' kind) holds the thread until it is done: a 100 us host task after a launched 1 ms kernel
// waits for the kernel (the stream's order) and the next step's launch waits for it, 8 us + 1 ms + 100 us.
TEST(GpuNodeTest, ATaskThatLaunchesNothingHoldsItsHostThread) {
  cluster::ClusterProfile p = gpu_node();
  p.costs["big"].latency = 1e-3;
  p.costs["host"].latency = 100e-6;
  models::Plan plan;
  plan.streams = {"compute"};
  plan.tasks.push_back(kernel(0, "k", 0, "big"));
  Task host = kernel(1, "h", 0, "host");
  host.kind = TaskKind::kHost;
  host.launches = 0;
  plan.tasks.push_back(host);
  auto r = simulate_plan(plan, p, steps(6));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 8e-6 + 1e-3 + 100e-6, 1e-12);
}

// A collective of one member moves nothing over a network: an all-to-all (out of place) copies its 48 MB on
// the device, read and written at the H200's 4.8 TB/s; an all-reduce (in place) costs nothing but its launch.
TEST(GpuNodeTest, AOneMemberCollectiveCostsItsLocalCopy) {
  const cluster::ClusterProfile p = gpu_node();
  models::Plan plan;
  plan.streams = {"comm"};
  Task a2a = kernel(0, "a2a", 0, "");
  a2a.kind = TaskKind::kCollective;
  a2a.bytes = 48'000'000;
  a2a.collective = models::Collective{};
  a2a.collective->op = models::CollectiveOp::kAllToAll;
  plan.tasks.push_back(a2a);
  auto r = simulate_plan(plan, p, steps(6));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_NEAR(r->step_time_s, 2 * 48e6 / 4.8e12, 1e-12);
  plan.tasks[0].collective->op = models::CollectiveOp::kAllReduce;
  auto in_place = simulate_plan(plan, p, steps(6));
  ASSERT_TRUE(in_place.is_ok());
  EXPECT_NEAR(in_place->step_time_s, 8e-6, 1e-12);  // launch-bound: 8 us a step
}

// Host work of a node's ranks shares the node's host cores: 8 GPUs' ranks each with 1 ms of host work a step
// take 1 ms on 16 cores, 8 x 1 ms / 4 = 2 ms on 4; on two nodes as on one (each node its own host).
TEST(GpuNodeTest, ANodesRanksShareItsHostCores) {
  cluster::ClusterProfile p = gpu_node();
  p.nodes = 2;
  p.devices_per_node = 8;
  p.intra_node.link = {450e9, 1e-6};
  p.costs["update"].latency = 1e-3;
  models::Plan plan;
  plan.streams = {"update"};
  Task update = kernel(0, "update", 0, "update");
  update.kind = TaskKind::kHost;
  update.launches = 0;
  plan.tasks.push_back(update);
  SimOptions o = steps(6);
  o.workers = 16;
  auto wide = simulate_plan(plan, p, o);
  ASSERT_TRUE(wide.is_ok()) << wide.status().message();
  EXPECT_NEAR(wide->step_time_s, 1e-3, 1e-12);
  p.host.cores = 4;
  auto narrow = simulate_plan(plan, p, o);
  ASSERT_TRUE(narrow.is_ok());
  EXPECT_NEAR(narrow->step_time_s, 8 * 1e-3 / 4, 1e-12);
}

// The profile's host section: one line naming the field for a bad value, and not beside node_cores.
TEST(GpuNodeTest, BadHostFieldsAreNamed) {
  const std::string good =
      "nodes: 1\ndevices_per_node: 1\nhost: {cores: 16, launch: 8us}\n"
      "device: {name: g, peak_flops: {bf16: 1TFLOPS}, memory: 1GB, memory_bandwidth: 1TB/s}\n"
      "host_link: {bandwidth: 10GB/s}\nhost_memory_bandwidth: 10GB/s\n"
      "nics: {bandwidth: 1GB/s}\ntopology: {kind: single_switch}\n";
  ASSERT_TRUE(cluster::parse_cluster_profile(good, "g.yaml").is_ok());
  auto error = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    auto r = cluster::parse_cluster_profile(text, "g.yaml");
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(error("cores: 16", "cores: 0"), "g.yaml: field 'host.cores': 0 must be >= 1");
  EXPECT_NE(error("launch: 8us", "launch: -1us").find("field 'host.launch'"), std::string::npos);
  EXPECT_NE(error("launch: 8us", "lunch: 8us").find("host.lunch"), std::string::npos);
  EXPECT_EQ(error("nodes: 1\n", "nodes: 1\nnode_cores: 2\n"),
            "g.yaml: field 'host': give node_cores (ranks that are CPU processes) or host (a GPU node's host), not "
            "both");
}

}  // namespace
}  // namespace clustertwin::sim
