// `clustertwin sim flexmarl` as a user runs it: the calibrated table as JSON,
// and bad input as one line with exit code 2.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cli/run_command.h"
#include "traces/trace_reader.h"

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
// finished framework, no carriage returns (common/progress.h).
TEST(SimFlexMarlCliTest, ProgressInALogIsOneLinePerStep) {
  const auto r = run_clustertwin({"sim", "flexmarl", "--framework", "sync,marti,flexmarl", "--calibration", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[1/3] sync: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" per step ("), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 3) << r.err;
  EXPECT_EQ(r.err.back(), '\n');
}

// --trace-dir writes each framework's last step; a job of a group of
// devices (a trainer group) is on every device of the group, once.
TEST(SimFlexMarlCliTest, TheTraceDrawsAGroupJobOnEachOfItsDevices) {
  const std::string dir = ::testing::TempDir() + "ct_flexmarl_traces";
  const auto r = run_clustertwin(
      {"sim", "flexmarl", "--framework", "sync", "--calibration", "none", "--trace-dir", dir, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int devices = nlohmann::json::parse(r.out)["rows"][0]["devices"].get<int>();
  auto reader = traces::TraceReader::open(dir + "/sync.json");
  ASSERT_TRUE(reader.is_ok()) << reader.status().message();
  std::map<std::tuple<std::string, double, double>, std::set<int64_t>> ranks_of;
  std::map<std::tuple<std::string, double, double>, int64_t> group_of;
  std::set<int64_t> ranks;
  traces::Event e;
  while ((*reader)->next(&e)) {
    const auto job = std::make_tuple(e.name, e.ts_us, e.dur_us);
    EXPECT_TRUE(ranks_of[job].insert(e.rank).second) << e.name << " twice on device " << e.rank;
    group_of[job] = e.group_size.value_or(1);
    ranks.insert(e.rank);
  }
  // Jobs of one name, start and length may run on several groups at once
  // (two instances' first chunks): their devices, in order, come in whole
  // groups of adjacent devices.
  int group_jobs = 0;
  for (const auto& [job, on] : ranks_of) {
    const int64_t g = group_of[job];
    const std::vector<int64_t> sorted(on.begin(), on.end());
    ASSERT_EQ(sorted.size() % static_cast<size_t>(g), 0u) << std::get<0>(job) << " on " << sorted.size() << " devices";
    for (size_t i = 0; i < sorted.size(); i += static_cast<size_t>(g)) {
      EXPECT_EQ(sorted[i + static_cast<size_t>(g) - 1] - sorted[i], g - 1) << std::get<0>(job) << " from " << sorted[i];
    }
    group_jobs += g > 1;
  }
  EXPECT_GT(group_jobs, 0) << "sync trains each agent on a group of devices";
  EXPECT_EQ(static_cast<int>(ranks.size()), devices) << "every device of the run has work";
}

TEST(SimFlexMarlCliTest, ScaleTestAgentsAndTheTable) {
  const auto r =
      run_clustertwin({"sim", "flexmarl", "--agents", "3x32B+7x14B", "--calibration", "none", "--framework", "marti"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("marti                3x32B+7x14B     160"), std::string::npos) << r.out;
}

// CA runs at MA's fit: the calibration is the same one figure (sync's 914.4 s on MA), so CA's synchronous
// step is the model's prediction, and the 32B pricing agent makes it differ from MA's.
TEST(SimFlexMarlCliTest, CaRunsAtMasFit) {
  const auto ma = run_clustertwin({"sim", "flexmarl", "--framework", "sync", "--json"});
  const auto ca = run_clustertwin({"sim", "flexmarl", "--workload", "ca", "--framework", "sync", "--json"});
  ASSERT_EQ(ma.exit_code, 0) << ma.err;
  ASSERT_EQ(ca.exit_code, 0) << ca.err;
  const auto m = nlohmann::json::parse(ma.out);
  const auto c = nlohmann::json::parse(ca.out);
  EXPECT_EQ(c["workload"], "CA");
  EXPECT_EQ(c["calibration"], m["calibration"]);
  EXPECT_EQ(c["sync_decode_efficiency"], m["sync_decode_efficiency"]);
  EXPECT_GT(std::abs(c["rows"][0]["step_s"].get<double>() - 914.4), 10.0);
}

// --workers is the flag of every twin; --devices, FlexMARL's old name for it,
// still works, says once on stderr that it is deprecated, and gives the same
// rows. Both at once is an error.
TEST(SimFlexMarlCliTest, DevicesIsADeprecatedAliasOfWorkers) {
  const std::vector<std::string> base = {"sim", "flexmarl", "--framework", "marti", "--calibration", "none", "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_clustertwin(args);
  };
  const auto workers = with({"--workers", "48"});
  const auto devices = with({"--devices", "48"});
  ASSERT_EQ(workers.exit_code, 0) << workers.err;
  ASSERT_EQ(devices.exit_code, 0) << devices.err;
  EXPECT_EQ(nlohmann::json::parse(workers.out)["rows"][0]["devices"], 48);
  EXPECT_EQ(devices.out, workers.out);
  EXPECT_EQ(workers.err.find("deprecated"), std::string::npos) << workers.err;
  EXPECT_EQ(devices.err.rfind("clustertwin: sim flexmarl --devices is deprecated; use --workers\n", 0), 0u)
      << devices.err;
  const auto both = with({"--workers", "48", "--devices", "48"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_EQ(std::count(both.err.begin(), both.err.end(), '\n'), 1) << both.err;
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
        BadFlag{{"--workers", "1000"}, "--workers 1000: more than the 768 devices of profile 'npu-768'"},
        BadFlag{{"--group", "7"}, "workload MA: group 7 does not divide the global batch 64"},
        BadFlag{{"--steps", "1"}, "--steps 1: must be >= 2 (the first step is warm-up)"},
        BadFlag{{"--calibration", "x"}, "--calibration 'x': unknown (allowed: auto, paper, none)"},
        BadFlag{{"--inter-query", "0"}, "workload MA: inter-query parallelism 0 must be >= 1"},
        BadFlag{{"--device-profile", "nosuch"},
                "--device-profile 'nosuch': no shipped device profile of that name (h200) and no such file"},
        BadFlag{{"--device-profile", "h200", "--decode-efficiency", "0.5"},
                "--decode-efficiency excludes --device-profile (see 'clustertwin --help')"},
        BadFlag{{"--calibration", "none", "--decode-efficiency", "0"},
                "--decode-efficiency 0: must be in [0.001, 1] (a share of the memory bandwidth)"},
        BadFlag{{"--workload", "xa"}, "--workload 'xa': unknown workload (allowed: ma, ca)"},
        // 0 is the setup's "a node per agent": given on the command line it is refused, not taken for it.
        // An unsigned option given a negative number (CLI11 alone would read -1 as 2^64 - 1): every command's.
        BadFlag{{"--seed", "-1"}, "--seed: -1 must be >= 0 (see 'clustertwin --help')"},
        BadFlag{{"--workers", "0"}, "--workers 0: must be >= 1 (leave it out for a node per agent)"},
        BadFlag{{"--workload", "ca", "--agents", "3x14B"}, "--workload excludes --agents (see 'clustertwin --help')"}));

// A device profile whose trace measured no decode cannot set the engines' decode efficiency.
TEST(SimFlexMarlCliTest, ADeviceProfileWithoutDecodeIsOneLine) {
  const std::string path = ::testing::TempDir() + "ct_no_decode.yaml";
  {
    std::ifstream in(std::string(CT_SOURCE_DIR) + "/sim/platforms/devices/h200.yaml");
    std::ofstream out(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("decode_bandwidth_share", 0) != 0) out << line << "\n";
    }
  }
  const auto r = run_clustertwin({"sim", "flexmarl", "--device-profile", path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "clustertwin: --device-profile " + path +
                       ": field 'decode_bandwidth_share' missing: its trace measured no decode token (give "
                       "a decode efficiency instead)\n");
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace clustertwin
