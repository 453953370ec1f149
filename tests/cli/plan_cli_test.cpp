// `clustertwin plan` as a user runs it, for NestPipe, FlowTrain and
// FlexMARL: the answer meets the target when the twin runs its confirm
// command, the count below it does not, and bad input is one line with exit
// code 2.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

// An uncalibrated setting on gpu-128 (8 devices per node, 16 nodes).
const std::vector<std::string> kSmall = {"--platform", "gpu-128", "--calibration", "none"};

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

double sim_qps(const std::vector<std::string>& args) {
  const auto r = run_clustertwin(with(args, {"--json"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out).at("rows").at(0).at("qps").get<double>();
}

TEST(PlanCliTest, TheAnswerIsConfirmedByTheTwinAndTheCountBelowFallsShort) {
  // The target: just under what nestpipe reaches at 64 workers, so the answer is at most 64.
  const double at_64 =
      sim_qps(with({"sim", "nestpipe", "--variant", "nestpipe", "--workers", "64", "--micro-batches", "8"}, kSmall));
  const double target = 0.999 * at_64;
  const auto r = run_clustertwin(with({"plan", "nestpipe", "--target-throughput", std::to_string(target), "--variants",
                                       "torchrec,nestpipe", "--micro-batches", "8", "--json"},
                                      kSmall));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& answer = j.at("answer");
  const int workers = answer.at("workers").get<int>();
  EXPECT_LE(workers, 64);
  EXPECT_GE(answer.at("samples_per_s").get<double>(), target);
  EXPECT_LT(j.at("simulated").get<int>(), j.at("space").get<int>() / 2);
  EXPECT_EQ(j.at("worker_counts").at("count"), 16);
  // Every simulated point is listed; the answer is one of them, an exact run.
  ASSERT_EQ(j.at("points").size(), j.at("simulated").get<size_t>());
  int listed = 0;
  for (const auto& p : j.at("points")) {
    listed += p.at("workers") == workers && p.at("exact") == true &&
              p.at("samples_per_s") == answer.at("samples_per_s") &&
              p.at("configuration") == answer.at("configuration");
  }
  EXPECT_EQ(listed, 1) << j.at("points").dump();
  // The confirm command, run as printed, gives the same figure.
  std::istringstream words(answer.at("confirm").get<std::string>());
  std::vector<std::string> confirm;
  for (std::string w; words >> w;)
    confirm.push_back(w);
  ASSERT_EQ(confirm.front(), "clustertwin");
  confirm.erase(confirm.begin());
  const double confirmed = sim_qps(confirm);
  EXPECT_DOUBLE_EQ(confirmed, answer.at("samples_per_s").get<double>());
  EXPECT_GE(confirmed, target);
  // One node fewer falls short.
  if (workers > 8) {
    ASSERT_TRUE(answer.contains("below"));
    EXPECT_EQ(answer.at("below").at("workers"), workers - 8);
    EXPECT_LT(answer.at("below").at("samples_per_s").get<double>(), target);
    for (std::string& w : confirm) {
      if (w == std::to_string(workers)) w = std::to_string(workers - 8);
    }
    EXPECT_LT(sim_qps(confirm), target);
  }
  // Every runner-up meets the target too, with at least as many workers.
  for (const auto& p : j.at("runner_ups")) {
    EXPECT_GE(p.at("samples_per_s").get<double>(), target);
    EXPECT_GE(p.at("workers").get<int>(), workers);
  }
}

// The first row's `key` of a sim command run with --json.
double sim_value(const std::vector<std::string>& args, const std::string& key) {
  const auto r = run_clustertwin(with(args, {"--json"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out).at("rows").at(0).at(key).get<double>();
}

// The words of an answer's confirm command, without the program's name.
std::vector<std::string> confirm_words(const nlohmann::json& answer) {
  std::istringstream words(answer.at("confirm").get<std::string>());
  std::vector<std::string> out;
  for (std::string w; words >> w;)
    out.push_back(w);
  EXPECT_EQ(out.front(), "clustertwin");
  out.erase(out.begin());
  return out;
}

// A small vision-language model on h100-1024: every mode fits on one node.
const std::vector<std::string> kSmallVlm = {"--platform", "h100-1024", "--model", "300M+7B", "--global-batch", "512"};

TEST(PlanCliTest, FlowTrainAnswerIsConfirmedByTheTwin) {
  const double at_32 =
      sim_value(with({"sim", "flowtrain", "--mode", "flowtrain", "--workers", "32"}, kSmallVlm), "samples_per_s");
  const double target = 0.999 * at_32;
  const auto r = run_clustertwin(
      with({"plan", "flowtrain", "--target-throughput", std::to_string(target), "--max-workers", "64", "--json"},
           kSmallVlm));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& answer = j.at("answer");
  const int workers = answer.at("workers").get<int>();
  EXPECT_LE(workers, 32);
  EXPECT_TRUE(answer.at("exact").get<bool>());
  EXPECT_NE(answer.at("detail").get<std::string>().find("TP"), std::string::npos);  // the layout it runs
  const double confirmed = sim_value(confirm_words(answer), "samples_per_s");
  EXPECT_DOUBLE_EQ(confirmed, answer.at("samples_per_s").get<double>());
  EXPECT_GE(confirmed, target);
  ASSERT_TRUE(answer.contains("below"));
  EXPECT_EQ(answer.at("below").at("workers"), workers - 8);
  EXPECT_LT(answer.at("below").at("samples_per_s").get<double>(), target);
}

// 6B+72B does not fit on 64 H100s in any layout: nothing is simulated, every mode says so.
TEST(PlanCliTest, FlowTrainModesThatFitNowhereAreNamed) {
  const auto r = run_clustertwin({"plan", "flowtrain", "--target-throughput", "100", "--max-workers", "64"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("0 of 0 points simulated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("flowtrain                          fits at no count up to 64 workers"), std::string::npos)
      << r.out;
}

TEST(PlanCliTest, FlexMarlAnswerIsConfirmedByTheTwin) {
  const std::vector<std::string> uncalibrated = {"--calibration", "none"};
  const double at_48 =
      sim_value(with({"sim", "flexmarl", "--framework", "flexmarl", "--workers", "48"}, uncalibrated), "tokens_per_s");
  const double target = 0.95 * at_48;
  const auto r = run_clustertwin(
      with({"plan", "flexmarl", "--target-throughput", std::to_string(target), "--max-workers", "96", "--json"},
           uncalibrated));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& answer = j.at("answer");
  const int devices = answer.at("devices").get<int>();
  EXPECT_LE(devices, 48);
  EXPECT_GE(answer.at("tokens_per_s").get<double>(), target);
  const double confirmed = sim_value(confirm_words(answer), "tokens_per_s");
  EXPECT_DOUBLE_EQ(confirmed, answer.at("tokens_per_s").get<double>());
  if (devices > 16) {
    ASSERT_TRUE(answer.contains("below"));
    EXPECT_LT(answer.at("below").at("tokens_per_s").get<double>(), target);
  }
}

TEST(PlanCliTest, AnUnreachableTargetIsExitThreeWithTheBestSeen) {
  const auto r = run_clustertwin(with(
      {"plan", "nestpipe", "--target-throughput", "1e12", "--variants", "torchrec", "--max-workers", "32"}, kSmall));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("no configuration meets the target within 32 workers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("needs at least"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("plan nestpipe: no configuration meets 1,000,000,000,000 samples/s within 32 workers"),
            std::string::npos)
      << r.err;
}

TEST(PlanCliTest, PlotDrawsEverySimulatedPoint) {
  const std::string dir = ::testing::TempDir() + "ct_plan_plot";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string png = dir + "/plan.png";
  const auto r = run_clustertwin(with(
      {"plan", "nestpipe", "--target-throughput", "1e4", "--variants", "torchrec,nestpipe", "--plot", png}, kSmall));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("plot: " + png + " (every simulated point)"), std::string::npos) << r.out;
  std::ifstream in(png, std::ios::binary);
  std::string head(8, '\0');
  in.read(head.data(), 8);
  EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(std::filesystem::file_size(png), 1000u);
  // gnuplot drew to a temporary file that was renamed: nothing else is left.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
}

void expect_bad(const std::vector<std::string>& args, const std::string& line) {
  const auto r = run_clustertwin(with({"plan", "nestpipe"}, args));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "clustertwin: " + line + "\n");
}

TEST(PlanCliTest, BadInputIsOneLineAndExitTwo) {
  expect_bad({"--target-throughput", "0", "--platform", "gpu-128", "--calibration", "none"},
             "--target-throughput 0: must be a positive number");
  expect_bad(
      {"--target-throughput", "1e5", "--min-efficiency", "1.5", "--platform", "gpu-128", "--calibration", "none"},
      "--min-efficiency 1.5: must be in [0, 1]");
  expect_bad({"--target-throughput", "1e5", "--max-workers", "4096", "--platform", "gpu-128", "--calibration", "none"},
             "--max-workers 4096: must be in [1, 128] (the devices of gpu-128)");
  expect_bad({"--target-throughput", "1e5", "--variants", "torchrec,pipedream"},
             "--variants 'pipedream': unknown variant (allowed: torchrec, semisync, dbp, fwp, nestpipe, 2dsp)");
  expect_bad({"--target-throughput", "1e5", "--micro-batches", "3"},
             "--micro-batches '3': must be a whole number that divides the batch (512)");
  expect_bad({"--target-throughput", "1e5", "--platform", "no-such-cluster"},
             "unknown platform 'no-such-cluster' (shipped: h100-1024, gpu-128, h200-1gpu, localhost-cpu, npu-1536, "
             "npu-768, a100-dgx, h100-dgx, h200-dgx; or a path to a .yaml file)");
  expect_bad({"--target-throughput", "1e5", "--plot", "plan.svg", "--platform", "gpu-128", "--calibration", "none"},
             "--plot plan.svg: must end in .png");
  expect_bad({"--target-throughput", "1e5", "--plot", "/no/such/dir/plan.png", "--platform", "gpu-128", "--calibration",
              "none"},
             "--plot /no/such/dir/plan.png: cannot write there");
  // Without gnuplot on the PATH, --plot says so before searching.
  const auto no_gnuplot =
      testing::run_command({"/usr/bin/env", "PATH=/nonexistent", CT_CLI_PATH, "plan", "nestpipe", "--target-throughput",
                            "1e5", "--plot", "plan.png", "--platform", "gpu-128", "--calibration", "none"});
  EXPECT_EQ(no_gnuplot.exit_code, 2);
  EXPECT_EQ(no_gnuplot.err,
            "clustertwin: --plot plan.png: gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)\n");
  const auto bad_mode = run_clustertwin({"plan", "flowtrain", "--target-throughput", "100", "--mode", "pipedream"});
  EXPECT_EQ(bad_mode.exit_code, 2);
  EXPECT_NE(bad_mode.err.find("pipedream"), std::string::npos) << bad_mode.err;
  EXPECT_EQ(bad_mode.err.find('\n'), bad_mode.err.size() - 1) << bad_mode.err;
  const auto bad_framework = run_clustertwin(
      {"plan", "flexmarl", "--target-throughput", "100", "--frameworks", "magic", "--calibration", "none"});
  EXPECT_EQ(bad_framework.exit_code, 2);
  EXPECT_NE(bad_framework.err.find("magic"), std::string::npos) << bad_framework.err;
  EXPECT_EQ(bad_framework.err.find('\n'), bad_framework.err.size() - 1) << bad_framework.err;
  const auto too_many = run_clustertwin(
      {"plan", "flexmarl", "--target-throughput", "100", "--max-workers", "1000", "--calibration", "none"});
  EXPECT_EQ(too_many.exit_code, 2);
  EXPECT_EQ(too_many.err, "clustertwin: --max-workers 1000: must be in [1, 768] (the devices of npu-768)\n");
  const auto missing = run_clustertwin({"plan", "nestpipe"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--target-throughput is required"), std::string::npos) << missing.err;
  const auto unknown = run_clustertwin({"plan", "pipedream", "--target-throughput", "1"});
  EXPECT_EQ(unknown.exit_code, 2);
}

}  // namespace
}  // namespace clustertwin
