#include "models/nestpipe/workload.h"

#include <gtest/gtest.h>

#include <cmath>

namespace clustertwin::models::nestpipe {
namespace {

// Statistics of 2 workers with 4 micro-batches, made up so that every size
// is easy to derive.
KeyStatsSummary stats() {
  KeyStatsSummary k;
  k.workers = 2;
  k.batch_per_worker = 8;
  k.micro_batches = 4;
  k.unique_per_worker = 100;
  k.unique_per_pair = {30, 50};   // one requester's unique keys per owner
  k.unique_per_owner = {40, 60};  // after the owner's dedup over both requesters
  k.patch_per_owner = {5, 15};
  k.micro_batch_unique = 30;  // 4 x 30 = 120 >= 100: dedup per micro-batch moves more
  k.clustered_micro_batch_unique = 27;
  return k;
}

TEST(WorkloadTest, StepSizesFollowTheStatistics) {
  auto spec = spec::recommender_spec("dlrm-small");
  ASSERT_TRUE(spec.is_ok()) << spec.status().message();
  Workload w;
  w.spec = &*spec;
  w.batch_per_worker = 8;
  w.micro_batches = 4;
  auto s = step_sizes(w, stats());
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  const int64_t row = spec->embedding_dim * 4;
  EXPECT_EQ(s->row_bytes, row);
  EXPECT_EQ(s->key_bytes, 100 * 8);            // unique keys x 8 B
  EXPECT_EQ(s->owner_rows_dedup, 50);          // mean of 40 and 60
  EXPECT_EQ(s->owner_rows_per_requester, 80);  // 2 requesters x mean(30, 50)
  EXPECT_EQ(s->emb_a2a_bytes, 100 * row);
  EXPECT_EQ(s->micro_emb_a2a_bytes, 4 * 30 * row);
  EXPECT_EQ(s->clustered_micro_emb_a2a_bytes, 4 * 27 * row);
  EXPECT_EQ(s->patch_rows, 10);  // mean of 5 and 15
  EXPECT_DOUBLE_EQ(s->dense_forward_flops, spec->forward_flops_per_sample() * 8);
  EXPECT_EQ(s->dense_param_bytes, static_cast<int64_t>(std::llround(spec->dense_params() * 4)));
  EXPECT_EQ(s->input_bytes, static_cast<int64_t>(std::llround(
                                8 * (spec->dense_features * 4.0 + spec->embedding_lookups_per_sample() * 8.0))));
  // Every variant's plan builds from these sizes.
  for (Variant v : all_variants()) {
    StepSizes sizes = *s;
    sizes.sharding_group = 1;
    EXPECT_TRUE(build_plan(v, sizes, 4).is_ok()) << variant_name(v);
  }
}

TEST(WorkloadTest, RejectsMismatchedStatistics) {
  auto spec = spec::recommender_spec("dlrm-small");
  Workload w;
  w.spec = &*spec;
  w.batch_per_worker = 8;
  w.micro_batches = 3;
  EXPECT_EQ(step_sizes(w, stats()).status().message(),
            "nestpipe workload: micro-batches 3: must divide the batch of 8");
  w.micro_batches = 2;
  EXPECT_EQ(step_sizes(w, stats()).status().message(),
            "nestpipe workload: key statistics are for 4 micro-batches, the workload has 2");
  w.spec = nullptr;
  EXPECT_EQ(step_sizes(w, stats()).status().message(), "nestpipe workload: no model spec");
}

}  // namespace
}  // namespace clustertwin::models::nestpipe
