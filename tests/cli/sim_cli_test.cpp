// `clustertwin sim` as a user runs it: the tables, and one line with exit
// code 2 for each class of bad profile, plan or flag.

#include <gtest/gtest.h>

#include <fstream>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

const std::string kPlans = std::string(CT_SOURCE_DIR) + "/sim/examples/plans/";

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

void expect_one_line_exit_2(const testing::CommandResult& r, const std::string& part) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}

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

}  // namespace
}  // namespace clustertwin
