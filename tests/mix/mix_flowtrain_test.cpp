// A FlowTrain job in a mix: FlowTrain's own actors on the job's placed view
// of the cluster's platform. Alone, it is `sim flowtrain` on the same
// devices; beside a job that shares its links, the difference comes out of
// the simulation.

#include <gtest/gtest.h>

#include <string>

#include "models/cluster/cluster_profile.h"
#include "sim/flowtrain/flowtrain_entry.h"
#include "sim/flowtrain/flowtrain_twin.h"
#include "sim/mix/mix_run.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {
namespace {

cluster::ClusterProfile h100() {
  auto p = cluster::load_cluster_profile("h100-1024");  // rail leaves of 32 nodes x 8 GPUs, non-blocking
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return *p;
}

// A small FlowTrain job: 300M+7B on 2 nodes, 4 encoder workers, 512 samples a step.
std::string vlm_job(const std::string& name, const std::string& mode, const std::string& extra = "") {
  return "  - {name: " + name + ", workers: 16, system: flowtrain, mode: " + mode +
         ", model: 300M+7B, encoder_workers: 4, global_batch: 512" + extra + "}\n";
}

MixSpec parse(const std::string& text) {
  auto mix = parse_mix(text, "mix.yaml", "");
  EXPECT_TRUE(mix.is_ok()) << mix.status().message();
  return mix.is_ok() ? *mix : MixSpec{};
}

// Alone in a mix, the job runs the same FlowTrainRun as `sim flowtrain` on
// the same 16 GPUs: nodes 0 and 1 of leaf 0 reach each other through their
// own node links on the whole cluster's platform as on the platform of 16
// GPUs, and the pool, the packing and the transfers are the same code. So
// the step time is equal, not close.
TEST(MixFlowTrainTest, AloneItRunsAsSimFlowtrainRunsIt) {
  const cluster::ClusterProfile profile = h100();
  for (const char* mode : {"flowtrain", "disagg-sync"}) {
    const MixSpec mix = parse("profile: h100-1024\nseed: 3\njobs:\n" + vlm_job("vlm", mode));
    ASSERT_TRUE(check_mix(mix, profile).is_ok());
    auto result = run_mix(mix, profile, MixOptions{});
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    const JobResult& job = result->jobs[0];
    EXPECT_EQ(job.nodes, (std::vector<int>{0, 1}));
    EXPECT_EQ(job.runs, std::string("flowtrain/") + mode);

    const auto& settings = dynamic_cast<const flowtrain::FlowTrainJobSettings&>(*mix.jobs[0].settings);
    auto row =
        flowtrain::run_flowtrain(flowtrain::job_setup(settings, job_frame(mix.jobs[0], 3)), profile, settings.mode);
    ASSERT_TRUE(row.is_ok()) << row.status().message();
    EXPECT_EQ(job.alone.step_time_s, row->step_s) << mode;
    EXPECT_EQ(job.mixed.step_time_s, row->step_s) << mode;
    EXPECT_EQ(job.slowdown, 1.0);
    // Steps run back to back from time 0: each step's end is the last one's plus its time.
    ASSERT_EQ(job.alone.step_end_s.size(), row->step_times_s.size());
    EXPECT_EQ(job.alone.step_end_s[0], row->step_times_s[0]);
    for (size_t i = 1; i < row->step_times_s.size(); ++i)
      EXPECT_EQ(job.alone.step_end_s[i] - job.alone.step_end_s[i - 1], row->step_times_s[i]) << mode << " step " << i;
    EXPECT_EQ(job.alone.mfu, row->mfu);
  }
}

// Two FlowTrain jobs packed on nodes 0-1 and 2-3 of one rail leaf: a flow
// between two nodes of a leaf crosses only their own node links, so the jobs
// share no link, and each runs in the mix exactly as alone.
TEST(MixFlowTrainTest, JobsThatShareNoLinkRunExactlyAsAlone) {
  const cluster::ClusterProfile profile = h100();
  const MixSpec mix = parse("profile: h100-1024\njobs:\n" + vlm_job("a", "flowtrain") + vlm_job("b", "disagg-sync"));
  auto result = run_mix(mix, profile, MixOptions{});
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_EQ(result->shared_links, 0);
  for (const JobResult& job : result->jobs) {
    EXPECT_EQ(job.mixed.step_end_s, job.alone.step_end_s) << job.name;
    EXPECT_EQ(job.slowdown, 1.0) << job.name;
  }
}

// The FlowTrain job on nodes 0 (leaf 0) and 32 (leaf 1): its encoder
// workers (ranks 0-3) and its first backbone replica on node 0, the other
// replicas on node 32, so embeddings and gradients cross both leaves'
// uplinks. A data-parallel job on nodes 1 and 33 sends one ring hop each
// way between the leaves. With a 256:1 spine a leaf's uplink carries 32 x 8
// x 50 GB/s / 256 = 50 GB/s, one NIC's: alone, either job's flows fit it;
// together they share it, and both take longer in the mix than alone. The
// report lists the uplinks with both jobs' bytes.
TEST(MixFlowTrainTest, BesideAJobOnItsUplinksItSlowsDown) {
  cluster::ClusterProfile profile = h100();
  profile.topology.oversubscription = {256};
  const MixSpec mix = parse("profile: h100-1024\njobs:\n" + vlm_job("vlm", "flowtrain", ", nodes: [0, 32]") +
                            "  - {name: ddp, workers: 16, nodes: [1, 33], steps: 40, data_parallel: {compute: 1ms, "
                            "allreduce_bytes: 4GiB}}\n");
  ASSERT_TRUE(check_mix(mix, profile).is_ok());
  auto result = run_mix(mix, profile, MixOptions{});
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const JobResult& vlm = result->jobs[0];
  EXPECT_GT(vlm.mixed.step_time_s, vlm.alone.step_time_s);
  EXPECT_GT(result->jobs[1].slowdown, 1.0);
  ASSERT_FALSE(result->contended.empty());
  bool uplink_of_both = false;
  for (const ContendedLink& link : result->contended) {
    if (link.link.rfind("up1", 0) != 0 || link.bytes_by_job.size() != 2) continue;
    uplink_of_both = link.bytes_by_job[0].first == "vlm" && link.bytes_by_job[0].second > 0 &&
                     link.bytes_by_job[1].first == "ddp" && link.bytes_by_job[1].second > 0;
    if (uplink_of_both) break;
  }
  EXPECT_TRUE(uplink_of_both) << mix_result_table(*result);
}

}  // namespace
}  // namespace clustertwin::sim::mix
