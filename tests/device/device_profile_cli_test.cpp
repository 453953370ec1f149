// `clustertwin calibrate device` and `sim flowtrain --device-profile`: a fit
// writes a profile the twin reads, and every bad input (trace, profile,
// flag) is one line naming the file, field and value, with exit code 2.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/cluster/device_profile.h"
#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;
using testing::write_temp;

const std::string kTrace = std::string(CT_SOURCE_DIR) + "/traces/data/kernels/h200-torch2.11-eager-2026-12-04.json";

int lines(const std::string& text) {
  int n = 0;
  for (char c : text)
    n += c == '\n';
  return n;
}

TEST(CalibrateDeviceCliTest, FitsTheShippedTraceAndPrintsResiduals) {
  const std::string out = ::testing::TempDir() + "ct_h200.yaml";
  const auto c = run_clustertwin({"calibrate", "device", kTrace, "--name", "h200", "-o", out});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("# device profile h200: NVIDIA H200"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("residual"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("# not fitted (other twins' inputs): layer x2, hstu x2"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("# decode_bandwidth_share 0.735"), std::string::npos) << c.out;
  auto profile = cluster::load_device_profile(out);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_TRUE(*profile == *cluster::load_device_profile("h200"));  // where the trace lies does not matter
  const auto again = run_clustertwin({"calibrate", "device", kTrace, "--name", "h200", "-o", out, "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["points"].size(), 11u);  // 8 GEMMs, 3 attention lengths
}

TEST(CalibrateDeviceCliTest, AMalformedTraceIsOneLineAndExitTwo) {
  std::ifstream in(kTrace);
  nlohmann::json j = nlohmann::json::parse(in);
  j["records"][2]["time_s"] = -1;
  const std::string bad = write_temp("ct_bad_kernels.json", j.dump());
  const auto c = run_clustertwin({"calibrate", "device", bad, "--name", "x", "-o", ::testing::TempDir() + "ct_x.yaml"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(lines(c.err), 1) << c.err;
  EXPECT_NE(c.err.find(bad + ": records[2].time_s -1: must be > 0"), std::string::npos) << c.err;
}

// The device subcommand made calibrate's TRACE and --out optional to CLI11: their absence is still one line.
TEST(CalibrateDeviceCliTest, CalibrateWithoutTraceOrOutIsStillOneLine) {
  const auto none = run_clustertwin({"calibrate", "-o", ::testing::TempDir() + "ct_none.yaml"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(lines(none.err), 1) << none.err;
  EXPECT_NE(none.err.find("calibrate: give at least one TRACE (or: calibrate device)"), std::string::npos) << none.err;
  const auto no_out = run_clustertwin({"calibrate", kTrace});
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("calibrate: --out is required"), std::string::npos) << no_out.err;
  const auto no_name = run_clustertwin({"calibrate", "device", kTrace, "-o", ::testing::TempDir() + "ct_n.yaml"});
  EXPECT_EQ(no_name.exit_code, 2) << no_name.err;
}

TEST(SimFlowTrainDeviceProfileTest, TheH200ProfilePrintsItsProvenance) {
  const auto c = run_clustertwin({"sim", "flowtrain", "--mode", "monolithic,flowtrain", "--workers", "128",
                                  "--global-batch", "256", "--steps", "2", "--device-profile", "h200"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("# device: measured profile h200: NVIDIA H200"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("torch 2.11.0+cu130 eager"), std::string::npos) << c.out;
  const auto assumed = run_clustertwin({"sim", "flowtrain", "--mode", "monolithic,flowtrain", "--workers", "128",
                                        "--global-batch", "256", "--steps", "2", "--json"});
  const auto measured =
      run_clustertwin({"sim", "flowtrain", "--mode", "monolithic,flowtrain", "--workers", "128", "--global-batch",
                       "256", "--steps", "2", "--json", "--device-profile", "h200"});
  ASSERT_EQ(assumed.exit_code, 0) << assumed.err;
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  const auto a = nlohmann::json::parse(assumed.out), m = nlohmann::json::parse(measured.out);
  EXPECT_EQ(a["device_profile"], "assumed");
  EXPECT_EQ(m["device_profile"], "h200");
  // Every measured efficiency is below the assumed ones (GEMMs 0.62-0.75 < 0.80, attention <= 0.49 < 0.55), so
  // each mode's step is slower.
  for (size_t i = 0; i < a["rows"].size(); ++i)
    EXPECT_LT(m["rows"][i]["mfu"].get<double>(), a["rows"][i]["mfu"].get<double>()) << i;
}

TEST(SimFlowTrainDeviceProfileTest, BadDeviceProfileInputIsOneLineAndExitTwo) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string bad_yaml = write_temp("ct_bad_device.yaml",
                                          "name: d\ndescription: x\nsoftware_stack: s\nprovenance: {}\n"
                                          "peak_flops: 989.5e12\ngemm: [{size: 1e9, efficiency: 0}]\n"
                                          "attention: [{size: 1024, efficiency: 0.2}]\n");
  const std::vector<Case> cases = {
      {{"--device-profile", "h900"}, "--device-profile 'h900': no shipped device profile of that name (h200)"},
      {{"--device-profile", bad_yaml}, bad_yaml + ": field 'gemm[0].efficiency'"},
      {{"--device-profile", "h200", "--gemm-efficiency", "0.7"},
       "--device-profile h200: gives the efficiencies; leave out --gemm-efficiency and --attention-efficiency"},
      {{"--device-profile", "h200", "--platform", "npu-768"}, "--device-profile h200: its efficiencies are shares of "},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"sim", "flowtrain", "--workers", "128", "--steps", "2"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run_clustertwin(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace clustertwin
