// `clustertwin sim flexmarl` as a user runs it: the calibrated table as JSON,
// and bad input as one line with exit code 2.

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

TEST(SimFlexMarlCliTest, CalibratedRowsAsJson) {
  const auto r = run_clustertwin({"sim", "flexmarl", "--framework", "sync,flexmarl", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["platform"], "npu-768");
  EXPECT_EQ(j["workload"], "MA");
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& sync = j["rows"][0];
  const auto& flex = j["rows"][1];
  EXPECT_EQ(sync["framework"], "sync");
  EXPECT_EQ(flex["framework"], "flexmarl");
  // On npu-768 the decode efficiency is fitted so that sync takes the paper's 914.4 s.
  EXPECT_NEAR(sync["step_s"].get<double>(), 914.4, 0.5);
  EXPECT_NEAR(j["calibration"]["sync_step_s"].get<double>(), 914.4, 0.5);
  for (const char* field : {"step_s", "tokens_per_s", "utilization", "speedup"}) {
    EXPECT_TRUE(flex.contains(field)) << field;
  }
  EXPECT_GT(flex["speedup"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(flex["speedup"].get<double>(), sync["step_s"].get<double>() / flex["step_s"].get<double>());
}

// Progress on stderr that is not a terminal (a log, CI, a test): one line per
// finished framework, no carriage returns (models/common/progress.h).
TEST(SimFlexMarlCliTest, ProgressInALogIsOneLinePerStep) {
  const auto r = run_clustertwin({"sim", "flexmarl", "--framework", "sync,marti,flexmarl", "--calibration", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[1/3] sync: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" per step ("), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 3) << r.err;
  EXPECT_EQ(r.err.back(), '\n');
}

TEST(SimFlexMarlCliTest, ScaleTestAgentsAndTheTable) {
  const auto r =
      run_clustertwin({"sim", "flexmarl", "--agents", "3x32B+7x14B", "--calibration", "none", "--framework", "marti"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("marti                3x32B+7x14B     160"), std::string::npos) << r.out;
}

struct BadFlag {
  std::vector<std::string> args;
  const char* line;
};

class SimFlexMarlBadFlagTest : public ::testing::TestWithParam<BadFlag> {};

TEST_P(SimFlexMarlBadFlagTest, ExitsTwoWithOneLine) {
  std::vector<std::string> args = {"sim", "flexmarl"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  const auto r = run_clustertwin(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, std::string("clustertwin: ") + GetParam().line + "\n");
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SimFlexMarlBadFlagTest,
    ::testing::Values(
        // The three: an unknown model size, a micro-batch above the global batch, a load gap of 0.
        BadFlag{{"--agents", "3x13B"},
                "--agents '3x13B': unknown model size '13B' (known: 0.5B, 1.5B, 7B, 14B, 32B, 72B)"},
        BadFlag{{"--micro-batch", "128"}, "workload MA: micro-batch 128 must be in [1, 64] (the global batch)"},
        BadFlag{{"--load-gap", "0"}, "--load-gap 0: the load-gap threshold must be > 0 (requests)"},
        BadFlag{{"--framework", "verl"},
                "--framework 'verl': unknown framework (known: sync, marti, flexmarl, flexmarl-nobalance, "
                "flexmarl-noasync, or all)"},
        BadFlag{{"--devices", "1000"}, "--devices 1000: more than the 768 devices of profile 'npu-768'"},
        BadFlag{{"--group", "7"}, "workload MA: group 7 does not divide the global batch 64"},
        BadFlag{{"--steps", "1"}, "--steps 1: must be >= 2 (the first step is warm-up)"},
        BadFlag{{"--calibration", "x"}, "--calibration 'x': unknown (allowed: auto, paper, none)"},
        BadFlag{{"--decode-efficiency", "0.6"},
                "--decode-efficiency 0.6: fitted to the paper on npu-768; give --calibration none to set it"},
        BadFlag{{"--calibration", "none", "--decode-efficiency", "0"}, "--decode-efficiency 0: must be in (0, 1]"}));

}  // namespace
}  // namespace clustertwin
