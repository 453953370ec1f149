// NestPipe's twin: the baseline calibration reproduces the paper's TorchRec
// figures, and the pipelined variants, which were not fitted, land where the
// paper puts them at 1,536 workers.

#include <gtest/gtest.h>

#include "calibrators/nestpipe/nestpipe_paper_fit.h"
#include "sim/nestpipe/nestpipe_twin.h"

namespace clustertwin::sim::nestpipe {
namespace {

using calibrators::BaselineFit;
using calibrators::calibrate_nestpipe_baseline;
using calibrators::gpu_128_assumed_baseline;
using calibrators::PaperBaseline;

TEST(NestPipeTwinTest, CalibrationReproducesThePaperBaselineAndNestPipeFollows) {
  auto base = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(base.is_ok());
  NestPipeSetup setup;
  BaselineFit fit;
  const PaperBaseline paper;
  auto profile = calibrate_nestpipe_baseline(*base, setup, paper, &fit);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_LT(fit.max_error, 5e-3);
  EXPECT_NEAR(fit.large_step_s, paper.large_step_s, 5e-3 * paper.large_step_s);
  EXPECT_NEAR(fit.lookup_share_large, paper.lookup_share_large, 2e-3);
  EXPECT_NEAR(fit.a2a_share_small, paper.a2a_share_small, 2e-3);
  EXPECT_GT(fit.lookup_per_request_s, 0);  // the lookup grows with requesters
  EXPECT_GT(fit.a2a_congestion_peers, 0);  // the All2All share grows faster than its bytes
  EXPECT_LE(fit.a2a_efficiency, 1.0);

  NestPipeSweep sweep;
  sweep.variants = {models::nestpipe::Variant::kTorchRec, models::nestpipe::Variant::kNestPipe};
  sweep.workers = {128, 1536};
  sweep.options = nestpipe_sim_options();
  sweep.options.steps = 6;
  sweep.options.warmup_steps = 2;
  sweep.options.drain_steps = 1;
  auto rows = run_nestpipe_sweep(setup, *profile, sweep);
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 4u);
  const NestPipeRow& nestpipe_1536 = (*rows)[3];
  ASSERT_EQ(nestpipe_1536.variant, "nestpipe");
  ASSERT_EQ(nestpipe_1536.workers, 1536);
  EXPECT_NEAR(nestpipe_1536.speedup, 3.06, 0.15 * 3.06);
  EXPECT_NEAR(nestpipe_1536.scaling_efficiency, 0.9407, 0.05);
  // Exposed All2All is about 1/8 of the total with 8 micro-batches.
  EXPECT_LT(nestpipe_1536.exposed_comm_ms, 0.2 * nestpipe_1536.comm_ms);
}

TEST(NestPipeTwinTest, SingleScaleCalibrationHitsTheSharesWithTheNetworkAsIs) {
  auto base = cluster::load_cluster_profile("gpu-128");
  ASSERT_TRUE(base.is_ok());
  NestPipeSetup setup;
  setup.model = "fuxi-kuairand";
  BaselineFit fit;
  auto profile = calibrate_nestpipe_baseline(*base, setup, gpu_128_assumed_baseline(), &fit);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_NEAR(fit.lookup_share_small, 0.244, 2e-3);
  EXPECT_NEAR(fit.a2a_share_small, 0.092, 2e-3);
  EXPECT_EQ(fit.a2a_efficiency, 1.0);
  EXPECT_EQ(fit.lookup_per_request_s, 0.0);
}

TEST(NestPipeTwinTest, VariantsShareStepSizesAndTwoDspShardsOverItsGroup) {
  NestPipeSetup setup;
  setup.model = "hstu-small";
  setup.batch_per_worker = 64;
  setup.micro_batches = 4;
  setup.sharding_group = 16;
  EXPECT_EQ(nestpipe_owners(setup, models::nestpipe::Variant::k2dSp, 64), 16);
  EXPECT_EQ(nestpipe_owners(setup, models::nestpipe::Variant::kDbp, 64), 64);
  auto plan = nestpipe_plan(setup, models::nestpipe::Variant::k2dSp, 64);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  for (const models::Task& t : plan->tasks) {
    if (t.collective && t.collective->op == models::CollectiveOp::kAllToAll) {
      EXPECT_EQ(t.collective->group.kind, models::GroupSpec::Kind::kBlock);
      EXPECT_EQ(t.collective->group.size, 16);
    }
    if (t.name == "lookup_gather") {
      EXPECT_EQ(t.requests, 16);
    }
  }
  // 4 replicas of every shard: their changed rows are averaged over the workers 16 apart, rows and one fp32
  // of optimizer state each, and read and written back as one list.
  auto sizes = nestpipe_step_sizes(setup, 16);
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().message();
  ASSERT_TRUE(add_replica_sync(setup, 64, &*sizes).is_ok());
  EXPECT_GT(sizes->replica_sync_rows, 0);
  EXPECT_EQ(sizes->replica_sync_bytes, sizes->replica_sync_rows * (sizes->row_bytes + 4));
  // The rows any of the 4 replica groups changed: more than one group's, at most four groups' worth.
  EXPECT_GT(sizes->replica_sync_rows, sizes->owner_rows_dedup);
  EXPECT_LE(sizes->replica_sync_rows, 4 * sizes->owner_rows_dedup);
  int synced = 0;
  for (const models::Task& t : plan->tasks) {
    if (t.name == "replica_allreduce") {
      ++synced;
      EXPECT_EQ(t.collective->group.kind, models::GroupSpec::Kind::kStride);
      EXPECT_EQ(t.collective->group.size, 16);
      EXPECT_EQ(t.bytes, sizes->replica_sync_bytes);
    }
    if (t.name == "replica_gather") {
      EXPECT_EQ(t.requests, 1);
    }
  }
  EXPECT_EQ(synced, 1);
  // Syncing every 4 steps moves fewer rows per step (a row changed twice is sent once); one group, no replicas.
  NestPipeSetup rarely = setup;
  rarely.replica_sync_every = 4;
  auto rare = nestpipe_step_sizes(rarely, 16);
  ASSERT_TRUE(rare.is_ok() && add_replica_sync(rarely, 64, &*rare).is_ok());
  EXPECT_LT(rare->replica_sync_rows, sizes->replica_sync_rows);
  ASSERT_TRUE(add_replica_sync(setup, 16, &*sizes).is_ok());
  EXPECT_EQ(sizes->replica_sync_rows, 0);
  setup.sharding_group = 24;
  EXPECT_EQ(add_replica_sync(setup, 64, &*sizes).message(),
            "sharding_group 24: must divide the workers (64; 2dsp replicates whole groups)");
  setup.sharding_group = 16;
  setup.micro_batches = 5;
  EXPECT_EQ(nestpipe_plan(setup, models::nestpipe::Variant::kFwp, 64).status().message(),
            "micro_batches 5: must divide the batch of 64");
}

// The mechanisms behind the micro-batch trade-off at 1,536 workers, on the
// calibrated profile: every micro-batch pays the dense call overhead once
// (compute grows by exactly (32 - 2) x overhead from 2 to 32 micro-batches),
// and users' histories split across micro-batches in arrival order cost
// All2All that key-centric clustering takes back (an order, not a figure).
TEST(NestPipeTwinTest, MicroBatchesPayAFixedCostAndClusteringTakesBackRepeatedHistories) {
  auto base = cluster::load_cluster_profile("npu-1536");
  ASSERT_TRUE(base.is_ok());
  NestPipeSetup setup;
  auto profile = calibrate_nestpipe_baseline(*base, setup, PaperBaseline{}, nullptr);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  auto run = [&](int micro_batches, bool clustering) {
    NestPipeSetup s = setup;
    s.micro_batches = micro_batches;
    s.clustering = clustering;
    NestPipeSweep sweep;
    sweep.variants = {models::nestpipe::Variant::kNestPipe};
    sweep.workers = {1536};
    sweep.options = nestpipe_sim_options();
    sweep.options.steps = 4;
    sweep.options.warmup_steps = 1;
    sweep.options.drain_steps = 1;
    auto rows = run_nestpipe_sweep(s, *profile, sweep);
    EXPECT_TRUE(rows.is_ok()) << rows.status().message();
    return rows.is_ok() ? rows->front() : NestPipeRow{};
  };
  const NestPipeRow two = run(2, true), many = run(32, true), spread = run(32, false);
  // dense compute: FLOPs / rate + micro-batches x overhead; the FLOPs are the batch's either way
  // overhead: 4 HSTU blocks x 40 kernels x 5 us = 0.8 ms
  EXPECT_DOUBLE_EQ(*nestpipe_dense_call_overhead(setup), 4 * 40 * 5e-6);
  EXPECT_NEAR(many.compute_ms - two.compute_ms, 30 * 0.8, 1e-3);
  EXPECT_LT(many.comm_ms, spread.comm_ms);
  EXPECT_LT(2 * many.exposed_comm_ms, spread.exposed_comm_ms);
}

}  // namespace
}  // namespace clustertwin::sim::nestpipe
