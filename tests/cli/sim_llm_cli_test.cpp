// `clustertwin sim llm`, `plan llm`, `calibrate steps`, `run llm` as a user
// runs them: bad input is one line naming the flag (or the file, row and
// column) and the value, with exit code 2; a good run's --json holds the
// figures the issue names.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

void expect_refused(const std::vector<std::string>& args, const std::string& message) {
  const auto r = run_clustertwin(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "clustertwin: " + message + "\n");
}

const std::vector<std::string> kSmall = {"sim",  "llm", "--platform", "h100-dgx", "--workers",      "64",
                                         "--tp", "8",   "--pp",       "8",        "--global-batch", "64"};

std::vector<std::string> small_with(std::vector<std::string> more) {
  std::vector<std::string> args = kSmall;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(SimLlmCliTest, TheJsonHoldsStepMfuTokensBreakdownAndMemory) {
  const auto r = run_clustertwin(small_with({"--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"step_s", "mfu", "tokens_per_s"})
    EXPECT_GT(j.at(key).get<double>(), 0) << key;
  for (const char* key : {"compute_s", "exposed_tp_s", "bubble_s", "exposed_dp_s", "optimizer_s"})
    EXPECT_TRUE(j.at("breakdown").contains(key)) << key;
  for (const char* key : {"weights", "gradients", "optimizer", "activations"})
    EXPECT_GT(j.at("memory_gib").at(key).get<double>(), 0) << key;
}

TEST(SimLlmCliTest, BadFlagsAreOneLineAndExitTwo) {
  expect_refused({"sim", "llm", "--workers", "-8"}, "--workers -8: must be >= 1");
  expect_refused({"sim", "llm", "--tp", "0"}, "--tp 0: must be >= 1");
  expect_refused({"sim", "llm", "--workers", "64", "--tp", "3"}, "--workers 64: not a multiple of --tp 3 x --pp 16");
  expect_refused(small_with({"--schedule", "zigzag"}),
                 "--schedule 'zigzag': unknown (allowed: 1f1b, interleaved, gpipe)");
  expect_refused(small_with({"--recompute", "some"}), "--recompute 'some': unknown (allowed: none, selective, full)");
  expect_refused(small_with({"--layers", "95"}),
                 "--layers 95: do not divide into pp 8 x virtual_stages 1 equal chunks");
  expect_refused(small_with({"--heads", "7"}), "--heads 7: does not divide hidden 12288");
  expect_refused(small_with({"--precision", "fp4"}), "--precision 'fp4': unknown (allowed: bf16, fp16, fp8)");
  expect_refused(small_with({"--grad-reduce", "fp64"}), "--grad-reduce 'fp64': unknown (allowed: fp32, bf16)");
  expect_refused(small_with({"--dp", "3"}), "--dp 3: tp 8 x pp 8 x dp 3 is not the worker count 64");
  expect_refused({"sim", "llm", "--platform", "h100-dgx", "--workers", "1024", "--global-batch", "7"},
                 "--global-batch 7: is not a multiple of micro_batch 1 x dp 8");
  expect_refused(small_with({"--zero", "2"}), "--zero 2: must be 0 or 1");
  const auto memory = run_clustertwin(
      {"sim", "llm", "--platform", "h100-dgx", "--workers", "64", "--tp", "1", "--pp", "1", "--global-batch", "64"});
  EXPECT_EQ(memory.exit_code, 2);
  EXPECT_EQ(memory.err.rfind("clustertwin: --micro-batch 1: a GPU of the first stage needs ", 0), 0u) << memory.err;
  EXPECT_EQ(std::count(memory.err.begin(), memory.err.end(), '\n'), 1) << memory.err;
}

TEST(SimLlmCliTest, PlanCalibrateAndRunRefuseBadInputInOneLine) {
  expect_refused({"plan", "llm"}, "plan llm: give --workers N or --target-throughput TOKENS_PER_S (one of them)");
  expect_refused({"plan", "llm", "--workers", "64", "--simulate", "0"}, "--simulate 0: must be >= 1");
  expect_refused({"run", "llm"},
                 "run llm: the LLM workload has no real executor; simulate it with `clustertwin sim llm`");

  const std::string dir = ::testing::TempDir() + "/sim_llm_cli";
  std::filesystem::create_directories(dir);
  const std::string table = dir + "/steps.csv";
  std::ofstream(table) << "workers,tp,pp,dp,micro_batch,global_batch,hidden,heads,layers,seq,step_ms\n"
                          "8,8,1,1,1,64,4096,32,32,1024,900\n"
                          "8,3,1,2,1,64,4096,32,32,1024,900\n";
  expect_refused({"calibrate", "steps", table, "--platform", "h100-dgx", "-o", dir + "/fit.yaml"},
                 table + ": row 2 (line 3): cannot be modelled: dp 2: tp 3 x pp 1 x dp 2 is not the worker count 8");
  expect_refused({"calibrate", "steps", table, "--platform", "h100-dgx", "-o", dir + "/fit.yaml", "--fit", "speed"},
                 "--fit 'speed': unknown (allowed: auto, or of gemm, gemm_fp8, attention, overhead)");
  expect_refused({"calibrate", "steps", table, "--platform", "h100-dgx", "-o", dir + "/fit.yaml", "--split", "fit"},
                 table + ": header: no column 'split' to pick the rows of split 'fit'");
  EXPECT_FALSE(std::filesystem::exists(dir + "/fit.yaml"));  // nothing written for a refused table
}

}  // namespace
}  // namespace clustertwin
