// `clustertwin sim nestpipe` as a user runs it: the JSON rows the issue
// names, and one line with exit code 2 for each class of bad input.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

void expect_exit_2_with_line(const testing::CommandResult& r, const std::string& line) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "clustertwin: " + line + "\n");
}

// A small, uncalibrated sweep: every row has the documented fields, torchrec's
// speedup is 1 and each variant's scaling efficiency is 1 at its fewest workers.
TEST(SimNestPipeCliTest, JsonRowsHaveTheDocumentedFields) {
  const auto r =
      run_clustertwin({"sim",        "nestpipe", "--workers",       "16,32",      "--variant",     "torchrec,nestpipe",
                       "--platform", "gpu-128",  "--model",         "hstu-small", "--calibration", "none",
                       "--batch",    "64",       "--micro-batches", "4",          "--steps",       "5",
                       "--warmup",   "1",        "--drain",         "1",          "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("rows").size(), 4u);
  for (const auto& row : j.at("rows")) {
    for (const char* field : {"variant", "workers", "step_ms", "qps", "lookup_ms", "comm_ms", "exposed_comm_ms",
                              "speedup", "scaling_efficiency"}) {
      EXPECT_TRUE(row.contains(field)) << field;
    }
    EXPECT_GT(row.at("step_ms").get<double>(), 0);
    if (row.at("variant") == "torchrec") {
      EXPECT_DOUBLE_EQ(row.at("speedup").get<double>(), 1.0);
    }
    if (row.at("workers") == 16) {
      EXPECT_DOUBLE_EQ(row.at("scaling_efficiency").get<double>(), 1.0);
    }
  }
  EXPECT_EQ(j.at("platform"), "gpu-128");
  EXPECT_TRUE(j.at("calibration").is_null());
}

// Without torchrec in the run there is no speedup to print: "-", not "0.00x".
TEST(SimNestPipeCliTest, SpeedupWithoutItsBaselineIsADash) {
  const std::vector<std::string> small = {
      "--workers",     "16",   "--platform", "gpu-128", "--model",         "hstu-small",
      "--calibration", "none", "--batch",    "64",      "--micro-batches", "4",
      "--steps",       "5",    "--warmup",   "1",       "--drain",         "1"};
  auto table_row = [&](const std::string& variants, const std::string& variant) {
    std::vector<std::string> args = {"sim", "nestpipe", "--variant", variants};
    args.insert(args.end(), small.begin(), small.end());
    const auto r = run_clustertwin(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("\n" + variant + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  const std::string alone = table_row("nestpipe", "nestpipe");
  EXPECT_NE(alone.find("       -   100.0%"), std::string::npos) << alone;
  const std::string with_baseline = table_row("torchrec,nestpipe", "nestpipe");
  EXPECT_NE(with_baseline.find("x   100.0%"), std::string::npos) << with_baseline;
}

TEST(SimNestPipeCliTest, ZeroWorkers) {
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--workers", "0"}),
                          "--workers '0': '0' is not a worker count (a positive integer; several as 128,256,512)");
}

TEST(SimNestPipeCliTest, UnknownVariant) {
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--variant", "torchrec,pipedream"}),
                          "--variant 'pipedream': unknown variant (allowed: torchrec, semisync, dbp, fwp, nestpipe, "
                          "2dsp)");
}

TEST(SimNestPipeCliTest, MicroBatchesThatDoNotDivideTheBatch) {
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--micro-batches", "3"}),
                          "--micro-batches 3: must divide the batch of 512");
}

TEST(SimNestPipeCliTest, BadUserSyncAndOverheadKnobs) {
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--samples-per-user", "-1"}),
                          "--samples-per-user -1: must be >= 0 (0: the model's default)");
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--user-shared", "1.5"}),
                          "--user-shared 1.500: must be in [0, 1]");
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--sync-every", "0"}),
                          "--sync-every 0: must be at least 1");
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--launch-us", "-1"}),
                          "--launch-us -1: must be in [0, 1e6]");
}

TEST(SimNestPipeCliTest, UnknownModelAndCalibration) {
  const auto model = run_clustertwin({"sim", "nestpipe", "--model", "gpt-2"});
  EXPECT_EQ(model.exit_code, 2) << model.err;
  EXPECT_NE(model.err.find("--model: unknown model spec 'gpt-2'"), std::string::npos) << model.err;
  expect_exit_2_with_line(run_clustertwin({"sim", "nestpipe", "--calibration", "magic"}),
                          "--calibration 'magic': unknown (allowed: auto, paper, none)");
}

TEST(SimNestPipeCliTest, WorkersBeyondTheCluster) {
  const auto r = run_clustertwin({"sim", "nestpipe", "--platform", "gpu-128", "--workers", "256"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace clustertwin
