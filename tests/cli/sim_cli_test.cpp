// `clustertwin sim` as a user runs it: the tables, and one line with exit
// code 2 for each class of bad profile, plan or flag.

#include <gtest/gtest.h>

#include <fstream>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::expect_one_line_exit_2;
using testing::run_clustertwin;
using testing::write_temp;

const std::string kPlans = std::string(CT_SOURCE_DIR) + "/sim/examples/plans/";

TEST(SimCliTest, CollectivePrintsNcclTestsColumns) {
  const auto r = run_clustertwin({"sim", "collective", "--op", "allreduce", "--algo", "ring", "--bytes", "1M:4M",
                                  "--workers", "16", "--platform", "h100-1024"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("algbw (GB/s)"), std::string::npos);
  EXPECT_NE(r.out.find("busbw (GB/s)"), std::string::npos);
  EXPECT_NE(r.out.find("4194304"), std::string::npos) << r.out;  // 1M, 2M, 4M
}

TEST(SimCliTest, PlanRunsTheExampleAndWritesAValidTrace) {
  const std::string trace = ::testing::TempDir() + "ct_sim_cli_trace.json";
  const auto r = run_clustertwin({"sim", "plan", kPlans + "synthetic_overlap.json", "--workers", "32", "--platform",
                                  "npu-1536", "--trace-out", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("exposed comm (ms)"), std::string::npos) << r.out;
  const auto v = run_clustertwin({"trace", "validate", trace});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

TEST(SimCliTest, NegativeBandwidthInAProfile) {
  const std::string bad =
      write_temp("ct_bad_bw.yaml",
                 "name: bad\nnodes: 1\ndevices_per_node: 1\n"
                 "device: {name: d, peak_flops: {bf16: 1TFLOPS}, memory: 1GB, memory_bandwidth: 1GB/s}\n"
                 "host_link: {bandwidth: 1GB/s, latency: 1us}\nhost_memory_bandwidth: 10GB/s\n"
                 "nics: {per_node: 1, bandwidth: -5GB/s, latency: 1us}\n"
                 "topology: {kind: single_switch}\n");
  const auto r = run_clustertwin({"sim", "plan", kPlans + "ring_allreduce.json", "--workers", "1", "--platform", bad});
  expect_one_line_exit_2(r, "field 'nics.bandwidth'");
}

TEST(SimCliTest, UnknownTopology) {
  const std::string bad =
      write_temp("ct_bad_topo.yaml",
                 "name: bad\nnodes: 2\ndevices_per_node: 1\n"
                 "device: {name: d, peak_flops: {bf16: 1TFLOPS}, memory: 1GB, memory_bandwidth: 1GB/s}\n"
                 "host_link: {bandwidth: 1GB/s, latency: 1us}\nhost_memory_bandwidth: 10GB/s\n"
                 "nics: {per_node: 1, bandwidth: 5GB/s, latency: 1us}\n"
                 "topology: {kind: torus}\n");
  const auto r = run_clustertwin({"sim", "plan", kPlans + "ring_allreduce.json", "--workers", "2", "--platform", bad});
  expect_one_line_exit_2(r, "field 'topology.kind': unknown topology 'torus'");
}

TEST(SimCliTest, WorkersNotAMultipleOfDevicesPerNode) {
  const auto r =
      run_clustertwin({"sim", "plan", kPlans + "ring_allreduce.json", "--workers", "100", "--platform", "npu-1536"});
  expect_one_line_exit_2(r, "--workers 100: not a multiple of devices_per_node 16");
}

TEST(SimCliTest, DependencyCycle) {
  const std::string plan = write_temp("ct_cycle.json", R"({"system": "t", "variant": "cycle", "streams": ["s"],
    "tasks": [{"name": "a", "kind": "compute", "stream": "s", "deps": ["b"]},
              {"name": "b", "kind": "compute", "stream": "s", "deps": ["a"]}]})");
  const auto r = run_clustertwin({"sim", "plan", plan, "--workers", "2", "--platform", "h100-1024"});
  expect_one_line_exit_2(r, "dependency cycle");
}

TEST(SimCliTest, CollectiveJoinedByPartOfItsGroup) {
  const std::string plan = write_temp("ct_partial.json", R"({"system": "t", "variant": "partial", "streams": ["comm"],
    "tasks": [{"name": "ar", "kind": "collective", "stream": "comm", "bytes": 1024,
               "collective": {"op": "allreduce"}, "ranks": [[0, 4]]}]})");
  const auto r = run_clustertwin({"sim", "plan", plan, "--workers", "8", "--platform", "h100-1024"});
  expect_one_line_exit_2(r, "collective joined by only part of its group");
}

TEST(SimCliTest, BadFlags) {
  expect_one_line_exit_2(run_clustertwin({"sim", "collective", "--workers", "0"}), "--workers '0'");
  expect_one_line_exit_2(run_clustertwin({"sim", "collective", "--op", "gather"}), "--op 'gather': unknown collective");
  expect_one_line_exit_2(run_clustertwin({"sim", "collective", "--bytes", "1X"}), "unknown unit 'X'");
  expect_one_line_exit_2(run_clustertwin({"sim", "collective", "--fidelity", "exact"}), "--fidelity 'exact'");
  expect_one_line_exit_2(run_clustertwin({"sim", "collective", "--platform", "nowhere"}), "unknown platform 'nowhere'");
  expect_one_line_exit_2(
      run_clustertwin({"sim", "plan", kPlans + "ring_allreduce.json", "--steps", "3", "--warmup", "1", "--drain", "2"}),
      "--drain 2: warm-up plus drain steps must leave at least one of the 3 steps to measure");
  expect_one_line_exit_2(run_clustertwin({"sim", "plan", kPlans + "ring_allreduce.json", "--parallel", "0"}),
                         "--parallel");
}

// A one-GPU step whose backward completes 3 MiB of gradients, 1 MiB per task.
const char kOneGpuStep[] = R"({"system": "test", "variant": "one-gpu", "streams": ["compute"], "tasks": [
  {"name": "fwd", "kind": "compute", "stream": "compute", "flops": 1e12},
  {"name": "bwd3", "kind": "compute", "stream": "compute", "flops": 1e12, "grad_bytes": 1048576},
  {"name": "bwd2", "kind": "compute", "stream": "compute", "flops": 1e12, "grad_bytes": 1048576},
  {"name": "bwd1", "kind": "compute", "stream": "compute", "flops": 1e12, "grad_bytes": 1048576},
  {"name": "opt", "kind": "compute", "stream": "compute", "flops": 1e10}]})";

TEST(SimCliTest, DataParallelAddsTheBucketsAndWritesThePlan) {
  const std::string plan = write_temp("ct_one_gpu_step.json", kOneGpuStep);
  const std::string out = ::testing::TempDir() + "ct_one_gpu_step_dp.json";
  const auto r = run_clustertwin({"sim", "plan", plan, "--workers", "1,16", "--platform", "h100-1024",
                                  "--data-parallel", "--bucket-mib", "2", "--write-plan", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 3 MiB in 2 MiB buckets: one full bucket after bwd2, the 1 MiB rest after bwd1.
  EXPECT_NE(r.out.find("# data parallel: 3145728 bytes of gradients in 2 all-reduce(s) of up to 2 MiB"),
            std::string::npos)
      << r.out;
  const auto written = run_clustertwin({"sim", "plan", out, "--workers", "1", "--platform", "h100-1024"});
  EXPECT_EQ(written.exit_code, 0) << written.err;
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(R"("name": "dp allreduce 1", "kind": "collective", "stream": "dp allreduce", "bytes": 1048576)"),
            std::string::npos)
      << text;
}

TEST(SimCliTest, DataParallelBadFlags) {
  const std::string plan = write_temp("ct_one_gpu_step.json", kOneGpuStep);
  const std::string unmarked = kPlans + "synthetic_overlap.json";  // no task carries grad_bytes
  auto sim = [&](const std::string& file, std::vector<std::string> flags) {
    std::vector<std::string> args = {"sim", "plan", file, "--workers", "8", "--platform", "h100-1024"};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_clustertwin(args);
  };
  expect_one_line_exit_2(sim(plan, {"--data-parallel", "--bucket-mib", "0"}),
                         "--bucket-mib 0: must be a positive size in MiB");
  expect_one_line_exit_2(sim(plan, {"--data-parallel", "--bucket-mib", "-1"}),
                         "--bucket-mib -1: must be a positive size in MiB");
  expect_one_line_exit_2(sim(plan, {"--data-parallel", "--bucket-mib", "abc"}), "--bucket-mib");
  expect_one_line_exit_2(sim(plan, {"--bucket-mib", "4"}), "--bucket-mib requires --data-parallel");
  expect_one_line_exit_2(sim(plan, {"--scale-compute", "0"}), "--scale-compute 0: must be a positive number");
  expect_one_line_exit_2(sim(unmarked, {"--data-parallel"}),
                         "--data-parallel: no task of " + unmarked +
                             " carries grad_bytes; give the gradient bytes in all with --grad-bytes");
  expect_one_line_exit_2(sim(plan, {"--data-parallel", "--grad-bytes", "1M"}),
                         "--grad-bytes '1M': the tasks of " + plan + " carry their grad_bytes (3145728 bytes in all)");
  expect_one_line_exit_2(sim(unmarked, {"--data-parallel", "--grad-bytes", "1X"}), "unknown unit 'X'");
  expect_one_line_exit_2(sim(unmarked, {"--data-parallel", "--grads-from", "fwd"}),
                         "--grads-from requires --grad-bytes");
  expect_one_line_exit_2(sim(unmarked, {"--data-parallel", "--grad-bytes", "1M", "--grads-from", "nope"}),
                         "--grads-from 'nope': not a task of " + unmarked);
}

}  // namespace
}  // namespace clustertwin
