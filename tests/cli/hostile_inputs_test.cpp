// Hostile inputs (issue 49, item 5): each is refused with one line and exit
// code 2 where it is read, before any simulation or calibration starts, and
// names the field and the limit. Each case below ended, before, in a SimGrid
// abort, a hang, an allocation of gigabytes, or a silent exit 0.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::expect_one_line_exit_2;
using testing::run_clustertwin;
using testing::write_temp;

const std::string kSource = std::string(CT_SOURCE_DIR);
const std::string kPlan = kSource + "/sim/examples/plans/small_overlap.json";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The shipped h100-1024 profile with `from` replaced by `to` (which must occur once).
std::string profile_with(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = read_file(kSource + "/sim/platforms/h100-1024.yaml");
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from << " occurs twice";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return write_temp(name, text);
}

testing::CommandResult sim_plan_on(const std::string& profile) {
  return run_clustertwin({"sim", "plan", kPlan, "--workers", "8", "--platform", profile});
}

TEST(HostileInputsTest, AProfileQuantityBeyondAnyMachineNamesItsRange) {
  expect_one_line_exit_2(sim_plan_on(profile_with("ct_h_bw.yaml", "bandwidth: 450GB/s", "bandwidth: 1e308GB/s")),
                         "field 'intra_node.bandwidth': '1e308GB/s' is outside the bandwidth range 1 B/s .. 1 EB/s");
  expect_one_line_exit_2(sim_plan_on(profile_with("ct_h_peak.yaml", "bf16: 989.5TFLOPS", "bf16: 1e-300TFLOPS")),
                         "is outside the FLOP rate range 1 FLOP/s .. 1 EFLOP/s");
  expect_one_line_exit_2(sim_plan_on(profile_with("ct_h_lat.yaml", "latency: 0.2us", "latency: 1e308us")),
                         "field 'topology.switch_link.latency': '1e308us' is outside the time range 1 ps .. 1e8 s");
}

TEST(HostileInputsTest, ASecondYamlDocumentIsRefusedNotIgnored) {
  const std::string two =
      write_temp("ct_h_two.yaml", read_file(kSource + "/sim/platforms/h100-1024.yaml") + "---\nname: other\n");
  expect_one_line_exit_2(sim_plan_on(two), "2 YAML documents (separated by ---): a configuration file holds one");
}

TEST(HostileInputsTest, AliasesThatExpandBeyondAMillionValues) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j)
      bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  expect_one_line_exit_2(sim_plan_on(write_temp("ct_h_bomb.yaml", bomb + "name: bomb\n")),
                         "the file expands to more than 1000000 values");
}

TEST(HostileInputsTest, TopologyLevelsAreBounded) {
  expect_one_line_exit_2(sim_plan_on(profile_with("ct_h_levels.yaml", "levels: 2 ", "levels: 10000000 ")),
                         "field 'topology.levels': 10000000 must be <= 8");
}

// The failure example's mix with `from` replaced by `to`, beside a copy of the profile it names.
std::string failures_mix_with(const std::string& from, const std::string& to) {
  const std::string dir = kSource + "/sim/examples/mixes/";
  write_temp("npu-1536-3to1.yaml", read_file(dir + "npu-1536-3to1.yaml"));
  std::string text = read_file(dir + "npu-1536-failures.yaml");
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return write_temp("ct_h_failures.yaml", text);
}

TEST(HostileInputsTest, FailureTimelinesAreBoundedBeforeAnyIsDrawn) {
  expect_one_line_exit_2(run_clustertwin({"sim", "mix", failures_mix_with("horizon: 90d", "horizon: 1e12h")}),
                         "field 'failures.horizon': '1e12h' is outside the time range 1 ps .. 1e8 s");
  expect_one_line_exit_2(run_clustertwin({"sim", "mix", failures_mix_with("node_mtbf: 2000h", "node_mtbf: 1s")}),
                         "expected failures (64 nodes x horizon / node_mtbf) exceed the limit of 1e+07");
  expect_one_line_exit_2(
      run_clustertwin(
          {"sim", "mix", failures_mix_with("every: [15min, 30min, 1h, 2h, 4h], cost: 30s", "every: [1ns], cost: 0s")}),
      "field 'jobs[1].checkpoint.every': 1e-09 s, cuts the horizon (7.776e+06 s) into more than 1e+08 checkpoint "
      "segments");
  // Young's interval for a checkpoint of a picosecond is as short; one that costs nothing adds no Young row.
  expect_one_line_exit_2(run_clustertwin({"sim", "mix", failures_mix_with("cost: 30s", "cost: 1e-12s")}),
                         "field 'jobs[1].checkpoint.cost': Young's interval for this cost, ");
  const auto free = run_clustertwin({"sim", "mix", failures_mix_with("cost: 30s", "cost: 0s")});
  EXPECT_EQ(free.exit_code, 0) << free.err;
}

TEST(HostileInputsTest, NestPipeSizesAndDistributionsAreBounded) {
  expect_one_line_exit_2(run_clustertwin({"sim", "nestpipe", "--batch", "100000000"}),
                         "--batch 100000000: 102500000000 key slots (batch x 1025 lookups per sample) exceed the key "
                         "generator's limit of 2^32");
  expect_one_line_exit_2(run_clustertwin({"plan", "nestpipe", "--batch", "100000000", "--target-throughput", "1e6"}),
                         "exceed the key generator's limit of 2^32");
  expect_one_line_exit_2(run_clustertwin({"sim", "nestpipe", "--zipf", "1e308"}), "--zipf 1e+308: must be in (0, 100]");
  expect_one_line_exit_2(run_clustertwin({"sim", "nestpipe", "--launch-us", "1e308"}),
                         "--launch-us 1e+308: must be in [0, 1e6]");
  // The step counts are checked before the calibration to the paper (seconds).
  expect_one_line_exit_2(run_clustertwin({"sim", "nestpipe", "--steps", "0"}), "--steps 0: must be at least 1");
}

TEST(HostileInputsTest, AWhatIfOnAnotherWorkloadRunsOnThePapersCalibration) {
  // The cluster is fitted to the paper's TorchRec on the paper's workload; a Zipf exponent of 3 is then a
  // what-if on it (it did not converge when the fit took the what-if's workload).
  const auto r = run_clustertwin({"sim", "nestpipe", "--zipf", "3", "--workers", "16", "--variant", "torchrec"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("baseline calibrated to the paper's TorchRec"), std::string::npos) << r.out;
}

TEST(HostileInputsTest, LlmAndFlowTrainBounds) {
  expect_one_line_exit_2(run_clustertwin({"sim", "llm", "--global-batch", "2147483648"}),
                         "gives 268435456 micro-batches per pipeline, more than the limit of 65536");
  expect_one_line_exit_2(run_clustertwin({"sim", "flowtrain", "--gemm-efficiency", "1e-300"}),
                         "--gemm-efficiency 1e-300: must be in [0.001, 1]");
  // An unreachable target ends at once: no count of GPUs is searched whose peak cannot reach it.
  const auto r = run_clustertwin({"plan", "llm", "--target-throughput", "1e308"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no count of GPUs up to 16384 of h100-dgx reaches"), std::string::npos) << r.err;
}

TEST(HostileInputsTest, APlanOfNoTasksHasNoStepToMeasure) {
  const std::string empty = write_temp("ct_h_empty.json", R"({"system": "s", "streams": ["c"], "tasks": []})");
  expect_one_line_exit_2(run_clustertwin({"sim", "plan", empty, "--workers", "2"}),
                         "the plan has no tasks (a step of nothing has no time to measure)");
}

TEST(HostileInputsTest, AChakraFileWithInvalidUtf8IsOneLineWithoutProtobufsLog) {
  std::string et = read_file(kSource + "/tests/data/chakra/text_dp.0.et");
  const size_t at = et.find("COMP_NODE_layer0_FWD");
  ASSERT_NE(at, std::string::npos);
  et[at] = static_cast<char>(0xFF);  // the same length: the protobuf framing still holds
  const std::string path = write_temp("ct_h_utf8.0.et", et);
  const auto r = run_clustertwin({"trace", "import-chakra", path, "-o", ::testing::TempDir() + "ct_h_utf8.json"});
  expect_one_line_exit_2(r, "does not parse as a Chakra");
  EXPECT_EQ(r.err.find("libprotobuf"), std::string::npos) << r.err;
}

TEST(HostileInputsTest, TraceRanksMustMatchTheFilesGiven) {
  const std::string chakra = kSource + "/tests/data/chakra/";
  const std::string out = ::testing::TempDir() + "ct_h_plan.json";
  expect_one_line_exit_2(
      run_clustertwin({"trace", "import-chakra", chakra + "text_dp.0.et", chakra + "text_dp.0.et", "-o", out}),
      "text_dp.0.et: given twice (give each rank's file once)");
  const std::string five = ::testing::TempDir() + "x.5.et";
  {
    std::ofstream copy(five, std::ios::binary);
    copy << read_file(chakra + "text_dp.1.et");
  }
  expect_one_line_exit_2(run_clustertwin({"trace", "import-chakra", chakra + "text_dp.0.et", five, "-o", out}),
                         "x.5.et: rank 5 by its name, outside the 2 file(s) given");

  std::string kineto = read_file(kSource + "/traces/data/examples/kineto_ddp_rank0.json");
  const std::string rank0 = "\"rank\": 0, \"world_size\": 2";
  ASSERT_NE(kineto.find(rank0), std::string::npos);
  kineto.replace(kineto.find(rank0), rank0.size(), "\"rank\": 5, \"world_size\": 2");
  expect_one_line_exit_2(run_clustertwin({"trace", "import-kineto", write_temp("ct_h_rank5.json", kineto),
                                          ::testing::TempDir() + "ct_h_rank5.trace.json"}),
                         "field 'distributedInfo.world_size': 2 has no rank 5 (ranks 0 to 1)");
}

}  // namespace
}  // namespace clustertwin
