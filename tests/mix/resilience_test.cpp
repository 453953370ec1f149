// Failures and checkpoints: a job's timeline against closed forms (a listed
// failure by hand; exponential failures against Young's interval and
// Daly's expected goodput), and the mix file's failure fields.

#include "sim/mix/resilience.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/mix/mix_run.h"
#include "tests/mix/mix_test_util.h"

namespace clustertwin::sim::mix {
namespace {

constexpr double kHour = 3600;

TEST(ResilienceTest, AListedFailureLosesTheWorkSinceTheLastCheckpoint) {
  // Segments of 1 h work + 0.1 h checkpoint from 0: saved at 1.1 h and 2.2 h.
  // The failure at 2.5 h loses 0.3 h; the restart ends at 2.7 h; segments then
  // end at 3.8, 4.9, 6.0, 7.1, 8.2, 9.3 h; at the 10 h horizon 0.7 h of work is pending.
  const CheckpointPolicy policy{1 * kHour, 0.1 * kHour, 0.2 * kHour};
  const ResilienceResult r = run_timeline(policy, {2.5 * kHour}, 10 * kHour, 2.0);
  EXPECT_EQ(r.failures, 1);
  EXPECT_NEAR(r.useful_s, 8 * kHour, 1e-6);
  EXPECT_NEAR(r.checkpoint_s, 0.8 * kHour, 1e-6);
  EXPECT_NEAR(r.lost_s, 0.3 * kHour, 1e-6);
  EXPECT_NEAR(r.restart_s, 0.2 * kHour, 1e-6);
  EXPECT_NEAR(r.pending_s, 0.7 * kHour, 1e-6);
  // 8 h of 2 s steps over 10 h: 1,440 steps an hour.
  EXPECT_NEAR(r.goodput_steps_per_hour, 8 * kHour / 2 / 10, 1e-9);
}

TEST(ResilienceTest, AFailureDuringARestartStartsItOver) {
  // Failure at 0.5 h (lost 0.5 h), restart from 0.5 h, failure again at 0.6 h
  // (0.1 h of restart), restart 0.6-0.8 h, then a segment saves at 1.9 h.
  const CheckpointPolicy policy{1 * kHour, 0.1 * kHour, 0.2 * kHour};
  const ResilienceResult r = run_timeline(policy, {0.5 * kHour, 0.6 * kHour}, 2 * kHour, 1.0);
  EXPECT_EQ(r.failures, 2);
  EXPECT_NEAR(r.lost_s, 0.5 * kHour, 1e-6);
  EXPECT_NEAR(r.restart_s, 0.3 * kHour, 1e-6);
  EXPECT_NEAR(r.useful_s, 1 * kHour, 1e-6);
}

TEST(ResilienceTest, NodeFailuresAreSeededPerNodeAndExponential) {
  const double mtbf = 100 * kHour, horizon = 1e6 * kHour;
  const std::vector<double> a = node_failures(7, 3, mtbf, horizon);
  EXPECT_EQ(a, node_failures(7, 3, mtbf, horizon));
  EXPECT_NE(a, node_failures(7, 4, mtbf, horizon));
  EXPECT_NE(a, node_failures(8, 3, mtbf, horizon));
  // About horizon / MTBF = 10,000 failures; a Poisson count's sd is 100.
  EXPECT_NEAR(static_cast<double>(a.size()), 1e4, 400);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
}

// Exponential failures of a job MTBF M = 10 h (4 nodes of 40 h), checkpoint
// C = 60 s, restart R = 300 s. Young's interval sqrt(2 C M) = sqrt(2 x 60 x
// 36,000) = 2,078.5 s; Daly's expected time per segment of tau work is
// M e^(R/M) (e^((tau + C)/M) - 1), so the useful fraction at Young's
// interval is tau / that = 93.55%. Over 100,000 job MTBFs (~100,000 failures)
// the timeline must match within 5% (it does within a few tenths of a
// percent), and the sweep's best interval must be Young's among 1/4x..4x.
TEST(ResilienceTest, GoodputMatchesYoungAndDalyForExponentialFailures) {
  const double node_mtbf = 40 * kHour, job_mtbf = node_mtbf / 4, cost = 60, restart = 300;
  const double horizon = 100000 * job_mtbf;
  JobSpec job;
  job.checkpoint_cost_s = cost;
  job.restart_s = restart;
  const double young = young_interval(cost, job_mtbf);
  EXPECT_NEAR(young, 2078.46, 0.01);
  for (double k : {0.25, 0.5, 2.0, 4.0})
    job.checkpoint_every.push_back(k * young);
  FailureSpec failures;
  failures.present = true;
  failures.node_mtbf_s = node_mtbf;
  failures.horizon_s = horizon;
  const JobResilience res = job_resilience(job, failures, {0, 1, 2, 3}, 11, 1.0);
  ASSERT_EQ(res.rows.size(), 5u);
  ASSERT_TRUE(res.young_row);
  EXPECT_DOUBLE_EQ(res.mtbf_s, job_mtbf);
  EXPECT_DOUBLE_EQ(res.rows.back().interval_s, young);
  const double daly_at_young = young / daly_segment_time({young, cost, restart}, job_mtbf);
  EXPECT_NEAR(daly_at_young, 0.93553, 0.00001);
  EXPECT_NEAR(res.rows.back().useful_fraction, daly_at_young, 0.05 * daly_at_young);
  for (size_t i = 0; i < res.rows.size(); ++i)
    EXPECT_NEAR(res.rows[i].useful_fraction, res.daly_fraction[i], 0.05 * res.daly_fraction[i]) << i;
  EXPECT_EQ(res.best, 4u);  // Young's
  // Goodput in steps an hour: the useful fraction x 3,600 steps of 1 s.
  EXPECT_NEAR(res.rows.back().goodput_steps_per_hour, res.rows.back().useful_fraction * 3600, 1e-6);
}

TEST(ResilienceTest, AMixWithFailuresReportsEachCheckpointedJobAndRepeatsItself) {
  const std::string text = R"(profile: two-leaf
seed: 5
failures: {node_mtbf: 200h, horizon: 2000h}
jobs:
  - name: a
    workers: 4
    data_parallel: {compute: 1ms, allreduce_bytes: 64MiB}
    checkpoint: {every: [5min, 20min], state_bytes: 80GB, storage_bandwidth: 2GB/s, restart: 2min}
  - name: b
    workers: 4
    data_parallel: {compute: 1ms, allreduce_bytes: 64MiB}
)";
  const MixSpec mix = testing::parse_or_die(text);
  ASSERT_EQ(mix.jobs[0].checkpoint_cost_s, 40);  // 80 GB / 2 GB/s
  const cluster::ClusterProfile profile = testing::two_leaf_profile(1);
  ASSERT_TRUE(check_mix(mix, profile).is_ok());
  auto first = run_mix(mix, profile, MixOptions{});
  auto second = run_mix(mix, profile, MixOptions{});
  ASSERT_TRUE(first.is_ok() && second.is_ok()) << first.status().message();
  EXPECT_EQ(mix_result_json(*first), mix_result_json(*second));
  ASSERT_TRUE(first->jobs[0].has_resilience);
  EXPECT_FALSE(first->jobs[1].has_resilience);  // no checkpoint policy
  const JobResilience& res = first->jobs[0].resilience;
  EXPECT_DOUBLE_EQ(res.mtbf_s, 50 * kHour);  // 200 h over 4 nodes
  ASSERT_EQ(res.rows.size(), 3u);            // 5 min, 20 min, Young's
  EXPECT_GT(res.rows[0].failures, 0);
  EXPECT_NE(mix_result_table(*first).find("Young"), std::string::npos);
}

TEST(ResilienceTest, BadFailureFieldsAreNamed) {
  struct Case {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"profile: p\nfailures: {node_mtbf: -5h}\njobs: [{name: a, workers: 1, plan: p.json}]\n",
       "mix.yaml: field 'failures.node_mtbf': -5h must be > 0"},
      {"profile: p\nfailures: {horizon: 5h}\njobs: [{name: a, workers: 1, plan: p.json}]\n",
       "mix.yaml: field 'failures.node_mtbf': give either node_mtbf (seeded exponential failures) or at (a list of "
       "failures)"},
      {"profile: p\njobs: [{name: a, workers: 1, plan: p.json, checkpoint: {every: 0s, cost: 1s, restart: 1s}}]\n",
       "mix.yaml: field 'jobs[0].checkpoint.every': '0s' is not an interval (a time > 0, like 30min)"},
      {"profile: p\njobs: [{name: a, workers: 1, plan: p.json, checkpoint: {every: 1h, restart: 1s}}]\n",
       "mix.yaml: field 'jobs[0].checkpoint.cost': give either cost, or state_bytes and storage_bandwidth (the "
       "checkpoint's write time)"},
  };
  for (const Case& c : cases) {
    auto mix = parse_mix(c.yaml, "mix.yaml", "");
    ASSERT_FALSE(mix.is_ok()) << c.yaml;
    EXPECT_EQ(mix.status().message(), c.message);
  }
}

}  // namespace
}  // namespace clustertwin::sim::mix
