// clustertwin calibrate and validate on the shipped recorded traces: the
// profile written reads back and prices every cost key, validate uses it as
// a prediction, --max-error exits 3, and bad input is one line with exit 2.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/cluster/cluster_profile.h"
#include "tests/cli/run_command.h"

namespace clustertwin::calibrators {
namespace {

using testing::run_clustertwin;

const std::string kData = std::string(CT_SOURCE_DIR) + "/traces/data";
const std::string kBenchSmall = kData + "/collectives/bench-4rank-cpu-r1-small.json.gz";
const std::string kBenchLarge = kData + "/collectives/bench-4rank-cpu-r1-large.json.gz";
const std::string kRun2 = kData + "/nestpipe/real-2rank-cpu-dbp-r1.json.gz";
const std::string kRun4 = kData + "/nestpipe/real-4rank-cpu-dbp-r1.json.gz";

// A segment whose time does not grow with the bytes (in the shipped benchmark,
// broadcast's first: its smallest size) is pure latency, and the report says
// so rather than printing its unbounded bandwidth as a number.
TEST(CalibrateCliTest, ASegmentOfPureLatencyIsNamedSo) {
  const std::string out = ::testing::TempDir() + "ct_latency_only.yaml";
  const auto c = run_clustertwin({"calibrate", kBenchSmall, kBenchLarge, "-o", out});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const size_t line = c.out.find("# broadcast:");
  ASSERT_NE(line, std::string::npos) << c.out;
  const std::string broadcast = c.out.substr(line, c.out.find('\n', line) - line);
  EXPECT_NE(broadcast.find("[from 0 B: "), std::string::npos) << broadcast;
  EXPECT_NE(broadcast.find(" us/step, latency only]"), std::string::npos) << broadcast;
  EXPECT_NE(broadcast.find(" GB/s bus]"), std::string::npos) << broadcast;  // the larger sizes have a bandwidth
  EXPECT_EQ(c.out.find("e+09 GB/s"), std::string::npos) << c.out;
  auto profile = cluster::load_cluster_profile(out);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_GE(profile->collectives.at("broadcast").fit.front().bus_bandwidth, 1e18);
}

// An imported trace's kernel names run to 60 characters and more: the cost
// key column widens to the longest, so every row of the table, header
// included, has the same length and the numbers stay under their heads.
TEST(CalibrateCliTest, LongKernelNamesKeepTheTableInColumns) {
  const std::string dir = ::testing::TempDir();
  const std::string examples = kData + "/examples/";
  ASSERT_EQ(run_clustertwin({"trace", "import-kineto", examples + "kineto_ddp_rank0.json",
                             examples + "kineto_ddp_rank1.json", dir + "ct_ddp.json"})
                .exit_code,
            0);
  ASSERT_EQ(run_clustertwin({"trace", "derive-plan", dir + "ct_ddp.json", "-o", dir + "ct_ddp_run.json"}).exit_code, 0);
  const auto c = run_clustertwin({"calibrate", dir + "ct_ddp_run.json", "--base", "h100-1024", "--warmup", "1",
                                  "--drain", "0", "-o", dir + "ct_ddp.yaml"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const size_t head = c.out.find("  cost key ");
  ASSERT_NE(head, std::string::npos) << c.out;
  std::vector<std::string> rows;
  for (size_t at = head; at < c.out.size() && c.out.compare(at, 2, "  ") == 0;) {
    const size_t end = c.out.find('\n', at);
    rows.push_back(c.out.substr(at, end - at));
    at = end + 1;
  }
  ASSERT_GE(rows.size(), 3u) << c.out;
  size_t longest_key = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].size(), rows[0].size()) << rows[0] << "\n" << rows[i];
    longest_key = std::max(longest_key, rows[i].find(' ', 2) - 2);
  }
  EXPECT_GT(longest_key, 40u) << "the fixture's GEMM kernel names are long";
}

TEST(CalibrateCliTest, WritesAProfileThatValidateUsesAsAPrediction) {
  const std::string out = ::testing::TempDir() + "ct_calibrated.yaml";
  const auto c = run_clustertwin({"calibrate", kBenchSmall, kRun2, "-o", out, "--name", "mine"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("# alltoall:"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("dense_fwd"), std::string::npos) << c.out;
  auto profile = cluster::load_cluster_profile(out);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_EQ(profile->name, "mine");
  EXPECT_EQ(profile->collectives.at("allreduce").fit.front().from_bytes, 0);
  EXPECT_GT(profile->costs.at("dense_bwd").flop_rate, 0);

  // The 4-rank run predicted from the 2-rank profile: its costs, not a refit.
  const auto v = run_clustertwin({"validate", "nestpipe", "--real", kRun4, "--profile", out, "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const auto j = nlohmann::json::parse(v.out);
  EXPECT_EQ(j.at("costs"), "profile");
  EXPECT_EQ(j.at("runs"), 0);
  EXPECT_EQ(j.at("workers"), 4);
  EXPECT_GT(j.at("measured_steps").get<int>(), 5);
  ASSERT_FALSE(j.at("per_key").empty());
  for (const auto& k : j.at("per_key")) {
    EXPECT_GT(k.at("real_ms").get<double>(), 0) << k;
    EXPECT_GT(k.at("twin_ms").get<double>(), 0) << k;
  }

  // --json prints the fit quality as JSON.
  const auto cj = run_clustertwin({"calibrate", kBenchSmall, "-o", out, "--json"});
  ASSERT_EQ(cj.exit_code, 0) << cj.err;
  const auto fit = nlohmann::json::parse(cj.out);
  EXPECT_EQ(fit.at("collectives").size(), 5u);
  EXPECT_EQ(fit.at("collectives")[0].at("sizes").size(), 9u);
}

// --collectives-from-network fits only the run's other keys: its collectives are the benchmarked network's,
// and validate takes the profile as pricing every task.
TEST(CalibrateCliTest, CollectivesFromTheNetworkAreNotFittedFromTheRun) {
  const std::string out = ::testing::TempDir() + "ct_calibrated_network.yaml";
  const auto c = run_clustertwin({"calibrate", kBenchSmall, kRun2, "-o", out, "--collectives-from-network"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto profile = cluster::load_cluster_profile(out);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_GT(profile->costs.at("dense_fwd").flop_rate, 0);
  for (const char* key : {"emb_a2a_fwd", "emb_a2a_bwd", "key_a2a", "dense_allreduce"})
    EXPECT_EQ(profile->costs.count(key), 0u) << key;
  EXPECT_FALSE(profile->collectives.at("alltoall").fit.empty());
  const auto v = run_clustertwin({"validate", "nestpipe", "--real", kRun4, "--profile", out, "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(nlohmann::json::parse(v.out).at("costs"), "profile");
}

// --step-waits benchmarks: the benchmark's rank count gets each collective's wait per latency step (its smallest
// message's fitted time per step: 4 KiB among 4 ranks, an all-reduce's 6 steps), and the run's collective
// keys are fitted without it, so they come out cheaper than without the flag. Without benchmarks, or on a
// base whose devices have cores of their own, it is one line and exit 2.
TEST(CalibrateCliTest, StepWaitsComeFromTheBenchmarkAndLeaveTheKeys) {
  const std::string dir = ::testing::TempDir();
  const auto with = run_clustertwin({"calibrate", kBenchSmall, kBenchLarge, kRun2, "--step-waits", "benchmarks",
                                     "--json", "-o", dir + "ct_waits.yaml"});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  const auto without = run_clustertwin(
      {"calibrate", kBenchSmall, kBenchLarge, kRun2, "--step-waits", "none", "-o", dir + "ct_nowaits.yaml"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  auto waited = cluster::load_cluster_profile(dir + "ct_waits.yaml");
  auto plain = cluster::load_cluster_profile(dir + "ct_nowaits.yaml");
  ASSERT_TRUE(waited.is_ok() && plain.is_ok());
  const auto report = nlohmann::json::parse(with.out);
  double fitted_4k = -1;
  for (const auto& op : report.at("collectives")) {
    if (op.at("collective") != "allreduce") continue;
    for (const auto& size : op.at("sizes"))
      if (size.at("bytes") == 4096) fitted_4k = size.at("fitted_us").get<double>() * 1e-6;
  }
  ASSERT_GT(fitted_4k, 0);
  const auto& ar = waited->collectives.at("allreduce").step_wait;
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_NEAR(ar.at(4), fitted_4k / 6, 1e-12);
  EXPECT_TRUE(plain->collectives.at("allreduce").step_wait.empty());
  // dense_allreduce at 2 ranks lost 2 steps x the wait at 2 ranks (4 ranks', the only one measured).
  EXPECT_GT(waited->costs.at("dense_allreduce").bus_rate, plain->costs.at("dense_allreduce").bus_rate);
  for (const auto& [bad, message] :
       {std::pair{std::vector<std::string>{"calibrate", kRun2, "--step-waits", "benchmarks", "-o", dir + "ct_bad.yaml"},
                  "--step-waits benchmarks: needs collective benchmarks"},
        std::pair{std::vector<std::string>{"calibrate", kBenchSmall, kRun2, "--step-waits", "benchmarks", "--base",
                                           "h100-1024", "-o", dir + "ct_bad.yaml"},
                  "--step-waits benchmarks: needs a base whose ranks share cores"},
        std::pair{std::vector<std::string>{"calibrate", kRun2, "--step-waits", "always", "-o", dir + "ct_bad.yaml"},
                  "--step-waits always: must be auto, none, runs or benchmarks"},
        std::pair{std::vector<std::string>{"calibrate", kBenchSmall, "--step-waits", "runs", "-o", dir + "ct_bad.yaml"},
                  "--step-waits runs: no collective among the 0 run trace(s)"}}) {
    const auto r = run_clustertwin(bad);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// --step-waits runs: each collective cost key of the run gets the wait, per latency step, of its time off the
// calling thread's CPU once its members met, and the keys are fitted without it; the profile then replays the
// run within the shared-core fit's tolerance, its collectives still the run's.
TEST(CalibrateCliTest, StepWaitsFromTheRunsOwnCollectives) {
  const std::string dir = ::testing::TempDir();
  const auto with = run_clustertwin({"calibrate", kRun2, "--step-waits", "runs", "-o", dir + "ct_runwaits.yaml"});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  auto waited = cluster::load_cluster_profile(dir + "ct_runwaits.yaml");
  ASSERT_TRUE(waited.is_ok()) << waited.status().message();
  for (const char* key : {"dense_allreduce", "emb_a2a_fwd", "emb_a2a_bwd", "key_a2a"})
    EXPECT_GT(waited->costs.at(key).step_wait, 0) << key;
  for (const char* key : {"dense_fwd", "lookup_gather"})
    EXPECT_EQ(waited->costs.at(key).step_wait, 0) << key;  // not collectives
  EXPECT_TRUE(waited->collectives.empty() || waited->collectives.begin()->second.step_wait.empty());
  const auto v = run_clustertwin(
      {"validate", "nestpipe", "--real", kRun2, "--profile", dir + "ct_runwaits.yaml", "--max-error", "0.05"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  // The default (auto) on localhost-cpu, whose ranks share cores, is the same profile; none has no waits.
  auto text = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_EQ(run_clustertwin({"calibrate", kRun2, "-o", dir + "ct_autowaits.yaml"}).exit_code, 0);
  EXPECT_EQ(text(dir + "ct_autowaits.yaml"), text(dir + "ct_runwaits.yaml"));
  ASSERT_EQ(run_clustertwin({"calibrate", kRun2, "--step-waits", "none", "-o", dir + "ct_nowaits2.yaml"}).exit_code, 0);
  auto plain = cluster::load_cluster_profile(dir + "ct_nowaits2.yaml");
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  for (const auto& [op, factor] : plain->collectives)
    EXPECT_TRUE(factor.step_wait.empty()) << op;
  for (const auto& [key, cost] : plain->costs)
    EXPECT_EQ(cost.step_wait, 0) << key;
}

TEST(CalibrateCliTest, MaxErrorExitsThree) {
  const auto replay = run_clustertwin({"validate", "nestpipe", "--real", kRun4, "--max-error", "0"});
  EXPECT_EQ(replay.exit_code, 3) << replay.err;
  EXPECT_NE(replay.err.find("step-time error"), std::string::npos) << replay.err;
  EXPECT_NE(replay.err.find("exceeds --max-error 0%"), std::string::npos) << replay.err;
  EXPECT_NE(replay.out.find("real step"), std::string::npos);  // the figures still print
  const auto loose = run_clustertwin({"validate", "nestpipe", "--real", kRun4, "--max-error", "0.5"});
  EXPECT_EQ(loose.exit_code, 0) << loose.err;
  const auto bench = run_clustertwin({"validate", "collectives", "--real", kBenchLarge, "--max-error", "0", "--json"});
  EXPECT_EQ(bench.exit_code, 3) << bench.err;
  EXPECT_EQ(nlohmann::json::parse(bench.out).at("sizes").size(), 30u);  // 5 collectives x 6 sizes
}

TEST(CalibrateCliTest, BadInputIsOneLine) {
  const std::string out = ::testing::TempDir() + "ct_never_written.yaml";
  auto expect_one_line = [](const testing::CommandResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  };
  const std::string no_plan = std::string(CT_TEST_DATA_DIR) + "/traces/valid.json";
  expect_one_line(run_clustertwin({"calibrate", no_plan, "-o", out}), no_plan + ": field 'metadata.config.plan'");
  expect_one_line(run_clustertwin({"calibrate", kRun2, "-o", out, "--segments", "0"}), "--segments 0");
  expect_one_line(run_clustertwin({"calibrate", kRun2, "-o", out, "--tolerance", "2"}), "--tolerance");
  expect_one_line(run_clustertwin({"calibrate", kRun2, "-o", out, "--base", "nowhere.yaml"}), "nowhere.yaml");
  expect_one_line(run_clustertwin({"calibrate", kRun2, "-o", out, "--drain", "100"}),
                  kRun2 + ": --warmup 3 --drain 100");
  expect_one_line(run_clustertwin({"validate", "nestpipe", "--real", kRun4, "--max-error", "-0.5"}), "--max-error");
  // The replay names its warmup and drain; validate says them with its flags.
  expect_one_line(run_clustertwin({"validate", "nestpipe", "--real", kRun4, "--warmup", "0"}),
                  "clustertwin: --warmup 0: must be at least 1\n");
  expect_one_line(run_clustertwin({"validate", "nestpipe", "--real", kRun4, "--drain", "100"}),
                  "clustertwin: --drain 100: with warmup 3, leaves no step of the ");
  expect_one_line(run_clustertwin({"validate", "collectives", "--real", kRun4}),
                  "is not a collective benchmark ('collectives')");
  EXPECT_FALSE(cluster::read_cluster_profile(out).is_ok());  // nothing written on failure
}

}  // namespace
}  // namespace clustertwin::calibrators
