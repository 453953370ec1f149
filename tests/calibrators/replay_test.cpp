// Replaying recorded runs in the twin: the fit recovers known costs, a real
// run's replay lands on its own step time, and bad traces and flags are one
// line with exit code 2.

#include "calibrators/replay.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace clustertwin::calibrators {
namespace {

using testing::run_clustertwin;

// Sizes 1e6 and 3e6 FLOPs at 1 ms + 1 ns per FLOP: the line comes back exactly.
TEST(FitKeysTest, PooledSizesGiveLatencyAndRate) {
  std::vector<TaskSample> samples;
  for (int i = 0; i < 4; ++i) {
    samples.push_back({"dense_fwd", 1e-3 + 1e6 * 1e-9, 1e6, true});
    samples.push_back({"dense_fwd", 1e-3 + 3e6 * 1e-9, 3e6, true});
  }
  samples.push_back({"emb_a2a_fwd", 4e-3, 2e6, false});  // one size: all time per byte
  samples.push_back({"emb_a2a_fwd", 6e-3, 2e6, false});
  samples.push_back({"emb_update", 2e-3, 0, false});  // no size: a fixed time
  const auto fits = fit_keys(samples);
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_EQ(fits[0].cost_key, "dense_fwd");
  EXPECT_NEAR(fits[0].latency_s, 1e-3, 1e-12);
  EXPECT_NEAR(fits[0].seconds_per_unit, 1e-9, 1e-18);
  EXPECT_EQ(fits[0].samples, 8);
  EXPECT_DOUBLE_EQ(fits[1].latency_s, 0);
  EXPECT_DOUBLE_EQ(fits[1].seconds_per_unit, 5e-3 / 2e6);
  EXPECT_DOUBLE_EQ(fits[2].latency_s, 2e-3);
  const cluster::ClusterProfile p = profile_with_fits(cluster::ClusterProfile{}, fits);
  EXPECT_NEAR(p.costs.at("dense_fwd").seconds(2e6, 0), 3e-3, 1e-12);
  EXPECT_NEAR(p.costs.at("emb_a2a_fwd").seconds(0, 2e6), 5e-3, 1e-12);
  EXPECT_DOUBLE_EQ(p.costs.at("emb_update").seconds(0, 0), 2e-3);
}

// A real 2-rank run, then its replay: the twin's step is within 5% of the
// recorded one (the costs are fitted on the same run). The twin has no CPU
// contention, so the program runs alone (SERIAL in CMakeLists.txt): once, in
// a clean-clone make test, the real run shared the 2 cores with the docs
// test's processes and its median step came out 7.3% above the replay's.
// 20 steps (15 measured) keep the median off a few slow steps.
TEST(ReplayTest, ARealRunReplaysToItsOwnStepTime) {
  const std::string trace = ::testing::TempDir() + "ct_replay_dbp.json";
  const auto run = run_clustertwin({"launch", "--nproc", "2", "--", "run", "nestpipe", "--variant", "dbp", "--steps",
                                    "20", "--seed", "3", "--batch", "32", "--trace", trace});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto r = run_clustertwin({"validate", "nestpipe", "--real", trace, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("variant"), "dbp");
  EXPECT_EQ(j.at("workers"), 2);
  EXPECT_GT(j.at("real_step_ms").get<double>(), 0);
  EXPECT_LT(std::abs(j.at("step_error").get<double>()), 0.05) << r.out;
  bool has_patch = false;
  std::map<std::string, double> cpu_share;
  for (const auto& k : j.at("per_key")) {
    has_patch |= k.at("cost_key") == "dbp_patch";
    ASSERT_TRUE(k.contains("real_cpu_share")) << k;  // real runs record each task's thread CPU time
    cpu_share[k.at("cost_key")] = k.at("real_cpu_share").get<double>();
    EXPECT_GE(cpu_share[k.at("cost_key")], 0);
    EXPECT_LE(cpu_share[k.at("cost_key")], 1.05) << k;  // CPU time within the task's own wall time
  }
  EXPECT_TRUE(has_patch);
  // A matrix multiply keeps its thread busy; a Gloo collective's calling thread waits for Gloo's threads.
  EXPECT_GT(cpu_share.at("dense_fwd"), cpu_share.at("emb_a2a_fwd"));

  const auto wrong_system = run_clustertwin({"validate", "flexmarl", "--real", trace});
  EXPECT_EQ(wrong_system.exit_code, 2);
  EXPECT_EQ(wrong_system.err, "clustertwin: " + trace +
                                  ": field 'metadata.system': 'nestpipe' is not the system asked for ('flexmarl')\n");
  const auto no_steps = run_clustertwin({"validate", "nestpipe", "--real", trace, "--warmup", "0"});
  EXPECT_EQ(no_steps.exit_code, 2);
  EXPECT_EQ(no_steps.err.find('\n'), no_steps.err.size() - 1) << no_steps.err;
}

TEST(ReplayTest, ATraceWithoutAPlanIsOneLine) {
  const std::string trace = std::string(CT_TEST_DATA_DIR) + "/traces/valid.json";
  const auto r = run_clustertwin({"validate", "nestpipe", "--real", trace});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "clustertwin: " + trace +
                       ": field 'metadata.config.plan': missing: replay needs a trace recorded with the plan "
                       "(clustertwin run nestpipe --trace)\n");
}

}  // namespace
}  // namespace clustertwin::calibrators
