// Closed forms of jobs sharing a fabric: two identical all-reduce-bound
// jobs, each with half of its ring's hops crossing the spine, on a
// non-blocking and on a 3:1 oversubscribed two-leaf fat tree; and jobs that
// share no link at all.

#include <gtest/gtest.h>

#include "models/plan/plan_json.h"
#include "sim/mix/mix_run.h"
#include "tests/mix/mix_test_util.h"

namespace clustertwin::sim::mix {
namespace {

using testing::kNicBandwidth;
using testing::parse_or_die;
using testing::two_job_mix;
using testing::two_leaf_profile;

constexpr double kCompute = 1e-3;              // 1ms of compute a step
constexpr double kBytes = 64.0 * 1024 * 1024;  // 64MiB all-reduced a step
// A ring all-reduce of S over n = 4 ranks is 2(n-1) = 6 rounds of S/4 per
// hop; with every latency 0 a round takes its slowest hop's S/4 / rate.
constexpr double kRounds = 6;
constexpr double kHop = kBytes / 4;

StatusOr<MixResult> run(const std::string& placement, double oversubscription) {
  const MixSpec mix = parse_or_die(two_job_mix("1ms", "64MiB", placement));
  const cluster::ClusterProfile profile = two_leaf_profile(oversubscription);
  EXPECT_TRUE(check_mix(mix, profile).is_ok());
  MixOptions options;
  options.parallel = 2;
  return run_mix(mix, profile, options);
}

// Spread: job a on nodes 0, 1 | 4, 5 and job b on 2, 3 | 6, 7. Each ring
// (0 -> 1 -> 4 -> 5 -> 0) has one hop up each leaf's uplink and one down.
TEST(MixClosedFormTest, TwoJobsOnANonBlockingFatTreeDoNotSlowEachOtherDown) {
  auto result = run("spread", 1);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_EQ(result->jobs.size(), 2u);
  EXPECT_EQ(result->jobs[0].nodes, (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(result->jobs[1].nodes, (std::vector<int>{2, 3, 6, 7}));
  // Alone, every hop runs at the NIC's rate: 1 ms + 6 x 16 MiB / 12.5 GB/s = 9.0531 ms.
  const double alone = kCompute + kRounds * kHop / kNicBandwidth;
  for (const JobResult& job : result->jobs) {
    EXPECT_NEAR(job.alone.step_time_s, alone, alone * 1e-6) << job.name;
    // A leaf's uplink carries 4 x 12.5 GB/s: both jobs' crossing hops (2 x 12.5 GB/s) fit.
    EXPECT_NEAR(job.slowdown, 1.0, 0.01) << job.name;
  }
  // The jobs do share the leaves' uplinks and downlinks, at 2 x 12.5 / 50 of their capacity while they send.
  EXPECT_EQ(result->shared_links, 4);
}

TEST(MixClosedFormTest, TwoJobsOnA3To1SpineGetTheBottlenecksFairShare) {
  auto result = run("spread", 3);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  // A leaf's uplink carries 4 x 12.5 / 3 = 16.67 GB/s. Alone, a job's one
  // crossing hop gets the NIC's 12.5 GB/s (the uplink is not its
  // bottleneck); together, two crossing hops share the uplink fairly:
  // 8.33 GB/s each. Every round waits for its crossing hop:
  //   alone 1 ms + 6 x 16 MiB / 12.5 GB/s   = 9.053 ms
  //   mix   1 ms + 6 x 16 MiB / 8.333 GB/s  = 13.080 ms, slowdown 1.4448
  const double uplink = 4 * kNicBandwidth / 3;
  const double alone = kCompute + kRounds * kHop / kNicBandwidth;
  const double mixed = kCompute + kRounds * kHop / (uplink / 2);
  for (const JobResult& job : result->jobs) {
    EXPECT_NEAR(job.alone.step_time_s, alone, alone * 1e-6) << job.name;
    EXPECT_NEAR(job.slowdown, mixed / alone, 0.05 * mixed / alone) << job.name;
  }
  ASSERT_FALSE(result->contended.empty());
  // The busiest shared links are the leaves' uplinks and downlinks, each job carrying half of their bytes.
  const ContendedLink& top = result->contended.front();
  EXPECT_NEAR(top.bandwidth, uplink, 1);
  ASSERT_EQ(top.bytes_by_job.size(), 2u);
  EXPECT_EQ(top.bytes_by_job[0].second, top.bytes_by_job[1].second);
}

// Packed: job a fills leaf 0, job b leaf 1; no flow leaves its leaf, so
// the jobs share no link and the mix reproduces each job alone, bit for bit.
TEST(MixClosedFormTest, JobsThatShareNoLinkRunExactlyAsAlone) {
  for (double oversubscription : {1.0, 3.0}) {
    auto result = run("packed", oversubscription);
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(result->shared_links, 0);
    EXPECT_TRUE(result->contended.empty());
    for (const JobResult& job : result->jobs) {
      EXPECT_EQ(job.mixed.step_time_s, job.alone.step_time_s) << job.name;
      EXPECT_EQ(job.mixed.step_end_s, job.alone.step_end_s) << job.name;
      EXPECT_EQ(job.slowdown, 1.0) << job.name;
    }
  }
}

TEST(MixClosedFormTest, TheSameSeedGivesTheSameBytes) {
  const MixSpec mix = parse_or_die(two_job_mix("1ms", "64MiB", "random"));
  const cluster::ClusterProfile profile = two_leaf_profile(3);
  MixOptions options;
  options.seed = 7;
  options.seed_given = true;
  auto first = run_mix(mix, profile, options);
  auto second = run_mix(mix, profile, options);
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  EXPECT_EQ(mix_result_json(*first), mix_result_json(*second));
  EXPECT_EQ(mix_result_table(*first), mix_result_table(*second));
}

}  // namespace
}  // namespace clustertwin::sim::mix

namespace clustertwin::sim::mix {
namespace {

// One job alone in a mix is `sim plan` on the same devices: the whole
// cluster's platform routes a leaf's nodes among themselves exactly as the
// platform of that leaf alone does, and the job runs the same PlanRun.
TEST(MixClosedFormTest, AJobFillingALeafRunsAsSimPlanRunsIt) {
  const std::string plan_file = std::string(CT_SOURCE_DIR) + "/sim/examples/plans/synthetic_overlap.json";
  auto mix = parse_mix("profile: gpu-128\njobs: [{name: moe, workers: 64, plan: " + plan_file + "}]\n", "mix.yaml", "");
  ASSERT_TRUE(mix.is_ok()) << mix.status().message();
  auto profile = cluster::load_cluster_profile("gpu-128");  // leaves of 8 nodes x 8 GPUs: 64 workers fill leaf 0
  ASSERT_TRUE(profile.is_ok());
  ASSERT_TRUE(check_mix(*mix, *profile).is_ok());
  auto result = run_mix(*mix, *profile, MixOptions{});
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  auto plan = models::read_plan(plan_file);
  ASSERT_TRUE(plan.is_ok());
  SimOptions options;
  options.workers = 64;
  // A mix moves every collective as flows (its jobs share links), so sim plan does too here, to be equal to the bit;
  // with its shortcut on it agrees within 1e-9 (tests/sim/collective_shortcut_test.cpp).
  options.collective_shortcut = false;
  auto alone = simulate_plan(*plan, *profile, options);
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();
  const JobResult& job = result->jobs[0];
  EXPECT_EQ(job.nodes, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(job.alone.step_end_s, alone->step_end_s);
  EXPECT_EQ(job.mixed.step_end_s, alone->step_end_s);
  EXPECT_EQ(job.alone.exposed_comm_s, alone->exposed_comm_s);
}

}  // namespace
}  // namespace clustertwin::sim::mix
