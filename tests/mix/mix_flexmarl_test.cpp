// A FlexMARL job in a mix, through the twin interface (sim/core/twin.h):
// FlexMARL's orchestrator on the job's placed view of the cluster. Alone, it
// is `sim flexmarl` on the same devices; beside a job that shares its
// links, the difference comes out of the simulation.

#include <gtest/gtest.h>

#include <string>

#include "models/cluster/cluster_profile.h"
#include "sim/flexmarl/flexmarl_twin.h"
#include "sim/mix/mix_run.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {
namespace {

cluster::ClusterProfile h100_1024() {
  auto p = cluster::load_cluster_profile("h100-1024");  // rail leaves of 32 nodes x 8 GPUs, non-blocking
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return *p;
}

MixSpec parse_rl_mix(const std::string& text) {
  auto mix = parse_mix(text, "mix.yaml", "");
  EXPECT_TRUE(mix.is_ok()) << mix.status().message();
  return mix.is_ok() ? *mix : MixSpec{};
}

// The paper's MA workload (three 14B agents) on 4 nodes, 3 steps.
std::string rl_job(const std::string& name, const std::string& framework, const std::string& extra = "",
                   int steps = 3) {
  return "  - {name: " + name + ", workers: 32, steps: " + std::to_string(steps) +
         ", system: flexmarl, framework: " + framework + extra + "}\n";
}

// `sim flexmarl --calibration none --workers 32 --steps 3 --seed SEED` for one framework.
flexmarl::FlexMarlRow sim_flexmarl(const cluster::ClusterProfile& profile, const std::string& framework,
                                   uint64_t seed) {
  flexmarl::FlexMarlSetup setup;
  setup.devices = 32;
  setup.steps = 3;
  setup.seed = seed;
  auto decode = flexmarl::engine_decode_efficiency(flexmarl::kDefaultDeviceProfile);
  EXPECT_TRUE(decode.is_ok()) << decode.status().message();
  setup.efficiency.decode = *decode;
  setup.efficiency.sync_decode = *decode;
  auto row = flexmarl::run_flexmarl(setup, profile, *models::flexmarl::framework_from_name(framework));
  EXPECT_TRUE(row.is_ok()) << row.status().message();
  return row.is_ok() ? *row : flexmarl::FlexMarlRow{};
}

// Alone in a mix the job runs the same FlexMarlRun as `sim flexmarl` on the
// same 32 GPUs (nodes 0-3 of leaf 0 reach each other through their own node
// links on the whole cluster's platform as on a platform of 32 GPUs): the
// step times are equal, not close.
TEST(MixFlexMarlTest, AloneItRunsAsSimFlexmarlRunsIt) {
  const cluster::ClusterProfile profile = h100_1024();
  for (const char* framework : {"flexmarl", "marti", "sync"}) {
    const MixSpec mix = parse_rl_mix("profile: h100-1024\nseed: 5\njobs:\n" + rl_job("rl", framework));
    ASSERT_TRUE(check_mix(mix, profile).is_ok()) << check_mix(mix, profile).message();
    auto result = run_mix(mix, profile, MixOptions{});
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    const JobResult& job = result->jobs[0];
    EXPECT_EQ(job.nodes, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(job.runs, std::string("flexmarl/") + framework);

    const flexmarl::FlexMarlRow row = sim_flexmarl(profile, framework, 5);
    EXPECT_EQ(job.alone.step_time_s, row.step_s) << framework;
    EXPECT_EQ(job.mixed.step_time_s, row.step_s) << framework;
    // Steps run back to back from time 0: each step's end is the last one's plus its time.
    ASSERT_EQ(job.alone.step_end_s.size(), row.step_times_s.size());
    EXPECT_EQ(job.alone.step_end_s[0], row.step_times_s[0]);
    for (size_t i = 1; i < row.step_times_s.size(); ++i)
      EXPECT_EQ(job.alone.step_end_s[i] - job.alone.step_end_s[i - 1], row.step_times_s[i]) << framework << i;
  }
}

// A FlexMARL job and a NestPipe job packed in one rail leaf (nodes 0-3 and
// 4-5): flows between nodes of a leaf cross only their own node links, so
// the jobs share no link and each runs in the mix exactly as alone.
TEST(MixFlexMarlTest, BesideANestPipeJobThatSharesNoLinkItRunsExactlyAsAlone) {
  const cluster::ClusterProfile profile = h100_1024();
  const MixSpec mix = parse_rl_mix("profile: h100-1024\njobs:\n" + rl_job("rl", "flexmarl") +
                                   "  - {name: rec, workers: 16, system: nestpipe, steps: 6, warmup: 2, drain: 1}\n");
  ASSERT_TRUE(check_mix(mix, profile).is_ok()) << check_mix(mix, profile).message();
  auto result = run_mix(mix, profile, MixOptions{});
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_EQ(result->jobs[1].runs, "nestpipe/nestpipe");
  EXPECT_EQ(result->shared_links, 0);
  for (const JobResult& job : result->jobs) {
    EXPECT_GT(job.mixed.step_time_s, 0) << job.name;
    EXPECT_EQ(job.mixed.step_end_s, job.alone.step_end_s) << job.name;
  }
}

// The FlexMARL job on nodes 0, 32, 64 and 96 (four leaves): its weight
// publishes and engine reloads cross the leaves' links. A data-parallel job
// on nodes 1 and 33 sends a ring hop each way between leaves 0 and 1. With a
// 256:1 spine a leaf's link to the spine carries one NIC's 50 GB/s: the two
// jobs' flows share it, so the data-parallel job's all-reduces take longer
// in the mix than alone, and the FlexMARL job's no less (its transfers run
// beside its rollout, off its step's critical path here). Two FlexMARL steps
// (about 2 x 71 s, the first the warm-up) inside the other job's 900 (about
// 900 x 0.16 s).
TEST(MixFlexMarlTest, ItsFlowsShareTheFabricWithAJobOnItsLinks) {
  cluster::ClusterProfile profile = h100_1024();
  profile.topology.oversubscription = {256};
  const MixSpec mix =
      parse_rl_mix("profile: h100-1024\njobs:\n" + rl_job("rl", "flexmarl", ", nodes: [0, 32, 64, 96]", 2) +
                   "  - {name: ddp, workers: 16, nodes: [1, 33], steps: 900, data_parallel: {compute: 1ms, "
                   "allreduce_bytes: 4GiB}}\n");
  ASSERT_TRUE(check_mix(mix, profile).is_ok()) << check_mix(mix, profile).message();
  auto result = run_mix(mix, profile, MixOptions{});
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const JobResult& rl = result->jobs[0];
  EXPECT_GE(rl.mixed.step_time_s, rl.alone.step_time_s) << mix_result_table(*result);
  EXPECT_GT(result->jobs[1].slowdown, 1.0) << mix_result_table(*result);
  bool uplink_of_both = false;
  for (const ContendedLink& link : result->contended) {
    if (link.bytes_by_job.size() != 2) continue;
    uplink_of_both = link.bytes_by_job[0].first == "rl" && link.bytes_by_job[0].second > 0 &&
                     link.bytes_by_job[1].first == "ddp" && link.bytes_by_job[1].second > 0;
    if (uplink_of_both) break;
  }
  EXPECT_TRUE(uplink_of_both) << mix_result_table(*result);
}

}  // namespace
}  // namespace clustertwin::sim::mix
