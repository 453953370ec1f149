// NestPipe's plans: each variant's structure, and its step time in the twin
// against a hand-derived schedule.

#include "models/nestpipe/plans.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "models/plan/plan_validator.h"
#include "sim/core/simulator.h"
#include "tests/sim/sim_test_util.h"

namespace clustertwin::models::nestpipe {
namespace {

// Every All2All moves S = 200 MB per rank on 4 workers: alpha + (3/4) S / beta = 2.5 us + 15 ms.
StepSizes sizes() {
  StepSizes s;
  s.input_bytes = 1000;
  s.key_bytes = 0;
  s.owner_rows_dedup = 1000;
  s.owner_rows_per_requester = 1000;
  s.row_bytes = 256;
  s.emb_a2a_bytes = 200'000'000;
  s.micro_emb_a2a_bytes = 200'000'000;
  s.clustered_micro_emb_a2a_bytes = 200'000'000;
  s.patch_rows = 10;
  s.dense_forward_flops = 1e9;
  s.dense_param_bytes = 0;
  return s;
}

// Costs: gather 40 ms, copy 30 ms, update 10 ms, patch 1 ms, h2d 5 ms; dense forward 20 ms and backward 40 ms
// per batch (5e10 FLOP/s over 1e9 and 2e9 FLOPs), so a quarter of that per micro-batch.
cluster::ClusterProfile profile() {
  cluster::ClusterProfile p = sim::testing::uniform_switch(4, 10e9, 1e-6, 0.5e-6);
  auto fixed = [](double seconds) { return cluster::CostModel{seconds, 0, 0, 0, 0, 0}; };
  p.costs = {{"lookup_gather", fixed(40e-3)},
             {"lookup_copy", fixed(30e-3)},
             {"dense_fwd", cluster::CostModel{0, 5e10, 0, 0, 0, 0}},
             {"dense_bwd", cluster::CostModel{0, 5e10, 0, 0, 0, 0}},
             {"emb_update", fixed(10e-3)},
             {"dbp_patch", fixed(1e-3)},
             {"h2d", fixed(5e-3)}};
  return p;
}

constexpr double kA = 15.0025e-3;  // one whole-batch All2All

double step_of(Variant v, int micro_batches = 4) {
  auto plan = build_plan(v, sizes(), micro_batches);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  sim::SimOptions o;
  o.workers = 4;
  // The lookup stream can run two steps ahead of the rest: measure in the
  // middle of a longer run (4 warm-up and 3 drain steps).
  o.steps = 12;
  o.warmup_steps = 4;
  o.drain_steps = 3;
  auto r = sim::simulate_plan(*plan, profile(), o);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? r->step_time_s : 0;
}

TEST(NestPipePlansTest, EveryVariantIsAValidPlan) {
  for (Variant v : all_variants()) {
    StepSizes s = sizes();
    s.sharding_group = 2;
    auto plan = build_plan(v, s, 4);
    ASSERT_TRUE(plan.is_ok()) << variant_name(v) << ": " << plan.status().message();
    EXPECT_TRUE(models::validate_plan_for_world(*plan, "p", 8, 4).is_ok()) << variant_name(v);
    EXPECT_EQ(plan->variant, variant_name(v));
  }
}

TEST(NestPipePlansTest, SynchronyIsInTheDependencies) {
  auto find = [](const models::Plan& p, const std::string& name) {
    return *std::find_if(p.tasks.begin(), p.tasks.end(), [&](const models::Task& t) { return t.name == name; });
  };
  auto id = [](const models::Plan& p, const std::string& name) {
    for (const auto& t : p.tasks) {
      if (t.name == name) return t.id;
    }
    return -1;
  };
  const models::Plan torchrec = *build_plan(Variant::kTorchRec, sizes(), 1);
  const models::Plan semisync = *build_plan(Variant::kSemiSync, sizes(), 1);
  const models::Plan dbp = *build_plan(Variant::kDbp, sizes(), 1);
  auto waits_for = [&](const models::Task& t, int dep) {
    return std::find(t.prev_step_deps.begin(), t.prev_step_deps.end(), dep) != t.prev_step_deps.end();
  };
  // A lookup reads rows after the previous batch updated them. torchrec reads batch i's rows in step i; semisync
  // reads batch i+1's rows in step i, and batch i's update waits for that read: one step stale.
  EXPECT_TRUE(waits_for(find(torchrec, "lookup_gather"), id(torchrec, "emb_update")));
  EXPECT_EQ(find(torchrec, "lookup_gather").batch_offset, 0);
  EXPECT_EQ(find(semisync, "lookup_gather").batch_offset, 1);
  const models::Task semisync_update = find(semisync, "emb_update");
  EXPECT_NE(std::find(semisync_update.deps.begin(), semisync_update.deps.end(), id(semisync, "lookup_gather")),
            semisync_update.deps.end());
  EXPECT_EQ(id(semisync, "dbp_patch"), -1);
  // DBP: the prefetch waits for the update before the previous one; the patch follows this batch's update, and
  // the next batch's All2All follows the patch.
  EXPECT_TRUE(waits_for(find(dbp, "lookup_gather"), id(dbp, "emb_update")));
  const models::Task patch = find(dbp, "dbp_patch");
  EXPECT_NE(std::find(patch.deps.begin(), patch.deps.end(), id(dbp, "emb_update")), patch.deps.end());
  EXPECT_TRUE(waits_for(find(dbp, "emb_a2a_fwd"), id(dbp, "dbp_patch")));
  EXPECT_EQ(find(dbp, "lookup_gather").batch_offset, 1);
  EXPECT_EQ(patch.batch_offset, 1);
  EXPECT_EQ(find(dbp, "h2d").batch_offset, 2);
  EXPECT_EQ(find(dbp, "key_a2a").batch_offset, 1);
}

// torchrec: gather + copy + A + fwd + bwd + A + update, in series: 140 ms + 2A.
TEST(NestPipePlansTest, TorchRecIsTheSerialChain) {
  EXPECT_NEAR(step_of(Variant::kTorchRec), 140e-3 + 2 * kA, 1e-4);
}

// semisync: the lookup no longer waits for the update, so the step is the
// comm-and-compute chain A + fwd + bwd + A, then the dense All-Reduce's
// latency-only rounds (2 (n-1) alpha = 15 us) and the next key All2All's (alpha).
TEST(NestPipePlansTest, SemiSyncHidesTheLookup) {
  EXPECT_NEAR(step_of(Variant::kSemiSync), 60e-3 + 2 * kA + 15e-6 + 2.5e-6, 1e-4);
}

// dbp: period T = A + fwd + bwd + A + update + patch = 71 ms + 2A, as long as
// the prefetch (gather + copy, 70 ms, started after the previous update)
// finishes before the patch: 140 ms + 2A - T = 69 ms <= 70 ms + 2A.
TEST(NestPipePlansTest, DbpPipelinesTheLookupAndStaysSynchronous) {
  EXPECT_NEAR(step_of(Variant::kDbp), 71e-3 + 2 * kA, 1e-4);
}

// fwp with 4 micro-batches: gather + copy (70 ms), then a quarter All2All
// (A/4 = 2.5 us + 3.75 ms) before the first forward, 4 x (5 + 10) ms of
// compute while the other All2Alls hide, the last gradient All2All (A/4) and
// the update: 70 + 60 + 10 ms + 2 (A/4).
TEST(NestPipePlansTest, FwpHidesAllButOneMicroBatchOfAll2All) {
  const double quarter = 2.5e-6 + 3.75e-3;
  EXPECT_NEAR(step_of(Variant::kFwp), 140e-3 + 2 * quarter, 1e-4);
}

// nestpipe = dbp's period with fwp's exposure: 71 ms + 2 (A/4).
TEST(NestPipePlansTest, NestPipeCombinesBoth) {
  const double quarter = 2.5e-6 + 3.75e-3;
  EXPECT_NEAR(step_of(Variant::kNestPipe), 71e-3 + 2 * quarter, 1e-4);
}

// Per-owner skew: owners of shares 1, 1, 1, 5 (mean 2) get 1/8, 1/8, 1/8, 5/8
// of each All2All (exact), or every peer the busiest owner's 5/8, 5/2 times
// the uniform bytes (the reduction). Whole batch for dbp, micro-batch shares
// for fwp.
TEST(NestPipePlansTest, SkewSplitsTheAll2AllByOwnerOrSendsEveryoneTheBusiestShare) {
  StepSizes s = sizes();
  s.a2a_share = {1, 1, 1, 5};
  s.micro_a2a_share = {2, 2, 2, 2};
  auto reduced = build_plan(Variant::kDbp, s, 1);
  ASSERT_TRUE(reduced.is_ok()) << reduced.status().message();
  s.exact_skew = true;
  auto exact = build_plan(Variant::kDbp, s, 1);
  auto fwp = build_plan(Variant::kFwp, s, 4);
  ASSERT_TRUE(exact.is_ok() && fwp.is_ok());
  for (const models::Task& t : reduced->tasks) {
    if (t.cost_key == "emb_a2a_fwd" || t.cost_key == "emb_a2a_bwd") {
      EXPECT_EQ(t.bytes, 500'000'000);  // 200 MB x 5/2
      EXPECT_TRUE(t.collective->split_bytes.empty());
    }
  }
  for (const models::Task& t : exact->tasks) {
    if (t.cost_key == "emb_a2a_fwd" || t.cost_key == "emb_a2a_bwd") {
      EXPECT_EQ(t.collective->split_bytes, (std::vector<int64_t>{25'000'000, 25'000'000, 25'000'000, 125'000'000}));
      EXPECT_EQ(t.bytes, 200'000'000);
    }
  }
  for (const models::Task& t : fwp->tasks) {
    if (t.cost_key == "emb_a2a_fwd") {
      EXPECT_EQ(t.collective->split_bytes, std::vector<int64_t>(4, 12'500'000));  // 200 MB / 4 micro / 4 owners
    }
  }
  EXPECT_TRUE(models::validate_plan_for_world(*exact, "p", 4, 4).is_ok());
}

// 2dsp with replicas to sync: gather after the update, All-Reduce over the
// workers G apart, write back; the next step's lookup waits for the write.
TEST(NestPipePlansTest, TwoDspSyncsReplicasBeforeTheNextLookup) {
  StepSizes s = sizes();
  s.sharding_group = 2;
  s.replica_sync_rows = 300;
  s.replica_sync_bytes = 300 * (256 + 4);
  auto plan = build_plan(Variant::k2dSp, s, 1);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  auto id = [&](const std::string& name) {
    for (const models::Task& t : plan->tasks) {
      if (t.name == name) return t.id;
    }
    return -1;
  };
  const models::Task& gather = plan->tasks[id("replica_gather")];
  const models::Task& sync = plan->tasks[id("replica_allreduce")];
  const models::Task& write = plan->tasks[id("replica_write")];
  EXPECT_EQ(gather.deps, std::vector<int>{id("emb_update")});
  EXPECT_EQ(gather.bytes, 300 * 256);
  EXPECT_EQ(sync.deps, std::vector<int>{gather.id});
  EXPECT_EQ(sync.collective->op, models::CollectiveOp::kAllReduce);
  EXPECT_EQ(sync.collective->group, (models::GroupSpec{models::GroupSpec::Kind::kStride, 2}));
  EXPECT_EQ(sync.bytes, 300 * 260);
  EXPECT_EQ(write.deps, std::vector<int>{sync.id});
  const models::Task& lookup = plan->tasks[id("lookup_gather")];
  EXPECT_NE(std::find(lookup.prev_step_deps.begin(), lookup.prev_step_deps.end(), write.id),
            lookup.prev_step_deps.end());
  EXPECT_TRUE(models::validate_plan_for_world(*plan, "p", 8, 4).is_ok());
  s.replica_sync_rows = 0;  // one group: nothing to sync
  auto alone = build_plan(Variant::k2dSp, s, 1);
  ASSERT_TRUE(alone.is_ok());
  for (const models::Task& t : alone->tasks)
    EXPECT_EQ(t.name.find("replica"), std::string::npos) << t.name;
}

TEST(NestPipePlansTest, RejectsBadSizes) {
  StepSizes s = sizes();
  s.row_bytes = 0;
  auto plan = build_plan(Variant::kTorchRec, s, 1);
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().message(), "nestpipe/torchrec: row_bytes 0: must be > 0");
  auto mb = build_plan(Variant::kFwp, sizes(), 0);
  EXPECT_EQ(mb.status().message(), "nestpipe/fwp: micro-batches 0: must be at least 1");
  EXPECT_EQ(*variant_from_name("nestpipe"), Variant::kNestPipe);
  EXPECT_FALSE(variant_from_name("async").has_value());
}

}  // namespace
}  // namespace clustertwin::models::nestpipe
