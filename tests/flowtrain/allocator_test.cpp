// The throughput-matching allocator: the split it picks is the best of all
// splits (checked against every split's two sides), memory forces the 72B
// backbone's model parallelism, a heavier encoder gets more workers, and
// the refused inputs.

#include "models/flowtrain/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

namespace clustertwin::models::flowtrain {
namespace {

// The dataset's mean costs for `model` on an H100-like device (989 TFLOP/s bf16, 3.35 TB/s, NVLink 450 GB/s,
// 80 GB, 8 a node).
AllocatorInputs h100_inputs(const std::string& model, int workers) {
  AllocatorInputs in;
  in.model = *vlm_spec(model);
  in.workers = workers;
  in.device.peak_flops = 989e12;
  in.device.memory_bandwidth = 3.35e12;
  in.device.link_bandwidth = 450e9;
  in.device.link_latency_s = 1e-6;
  in.memory_bytes = 80e9;
  set_dataset_means(&in, DatasetOptions{}, 4096);
  return in;
}

TEST(AllocatorTest, ThePickedSplitIsTheBestOfAll) {
  // (64 workers cannot hold the 72B backbone's state and 16K-token micro-batches beside an encoder.)
  for (int workers : {128, 256, 1024}) {
    const AllocatorInputs in = h100_inputs("6B+72B", workers);
    auto a = allocate(in);
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    EXPECT_EQ(a->splits_evaluated, workers - 1);
    EXPECT_EQ(a->encoder.devices + a->backbone.devices, workers);
    double best = 0;
    for (int e = 1; e < workers; ++e)
      best = std::max(best, std::min(best_encoder_layout(in, e).rate, best_backbone_layout(in, workers - e).rate));
    EXPECT_DOUBLE_EQ(a->rate, best);
    std::printf(
        "6B+72B on %d: %d encoder workers (TP %d, DP %d) at %.2f samples/s, %d backbone (TP %d, PP %d, "
        "DP %d) at %.2f\n",
        workers, a->encoder.devices, a->encoder.tp, a->encoder.dp, a->encoder.rate, a->backbone.devices, a->backbone.tp,
        a->backbone.pp, a->backbone.dp, a->backbone.rate);
    EXPECT_LE(a->backbone.memory_bytes, in.memory_bytes);
    EXPECT_LE(a->encoder.memory_bytes, in.memory_bytes);
    // The 72B backbone's bf16 weights and fp32 gradients alone (6 bytes a parameter) need TP x PP >= 8 in 80 GB.
    EXPECT_GE(a->backbone.tp * a->backbone.pp, 8);
  }
}

TEST(AllocatorTest, AHeavierEncoderGetsMoreWorkers) {
  AllocatorInputs in = h100_inputs("6B+72B", 256);
  auto light = allocate(in);
  in.encoder_flops *= 3;
  in.encoder_work = scaled(in.encoder_work, 3);
  auto heavy = allocate(in);
  ASSERT_TRUE(light.is_ok() && heavy.is_ok());
  EXPECT_GT(heavy->encoder.devices, light->encoder.devices);
  EXPECT_LT(heavy->rate, light->rate);
}

TEST(AllocatorTest, RefusedInputs) {
  AllocatorInputs in = h100_inputs("300M+7B", 8);
  in.encoder_workers = 0;
  EXPECT_EQ(allocate(in).status().message(), "encoder workers 0 of 8: each side needs at least one worker (1..7)");
  in.encoder_workers = 8;
  EXPECT_EQ(allocate(in).status().message(), "encoder workers 8 of 8: each side needs at least one worker (1..7)");
  in.encoder_workers = 4;
  auto forced = allocate(in);
  ASSERT_TRUE(forced.is_ok()) << forced.status().message();
  EXPECT_EQ(forced->encoder.devices, 4);
  EXPECT_EQ(forced->splits_evaluated, 1);
  in.encoder_workers = -1;
  in.workers = 1;
  EXPECT_EQ(allocate(in).status().message(),
            "workers 1: the split needs at least 2 (an encoder worker and a backbone worker)");
  AllocatorInputs big = h100_inputs("6B+72B", 8);
  big.memory_bytes = 8e9;
  EXPECT_EQ(allocate(big).status().message(),
            "allocator: no split of 8 workers fits 6B+72B in 8.000000 GB per device on both sides");
}

}  // namespace
}  // namespace clustertwin::models::flowtrain
