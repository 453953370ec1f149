// models/llm/llm_split.h: the split's checks (one field each) and the memory
// of a GPU against Korthikanti et al. 2022's activation formulas.

#include "models/llm/llm_split.h"

#include <gtest/gtest.h>

namespace clustertwin::models::llm {
namespace {

using transformer::Transformer;

Transformer gpt_22b() {  // Korthikanti et al. 2022, Table 3: 22B, 48 layers, hidden 6144, 64 heads, seq 2048
  return Transformer{6144, 64, 0, 0, 48, 2048, 51200, false};
}

Split split(int tp, int pp, int dp, int64_t micro_batch, int64_t global_batch) {
  Split s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.micro_batch = micro_batch;
  s.global_batch = global_batch;
  return s;
}

TEST(LlmSplitTest, ActivationsPerLayerAreKorthikantisFormulas) {
  const Transformer m = gpt_22b();
  Split s = split(8, 1, 1, 4, 4);
  s.fused_attention = false;  // the paper's attention keeps its scores
  const double sbh = 2048.0 * 4 * 6144, t = 8, as_h = 5.0 * 64 * 2048 / 6144;
  s.recompute = Recompute::kNone;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, s), sbh * (10 + 24 / t + as_h / t));  // tensor parallel only
  s.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, s), sbh * (34 + as_h) / t);
  s.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, s), sbh * 34 / t);
  s.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, s), sbh * (10 + 24 / t));
  s.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, s), 2 * sbh);
  s.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, s), 2 * sbh / t);
}

TEST(LlmSplitTest, FusedAttentionKeepsNoScoresSoNoneIsSelectivesMemory) {
  const Transformer m = gpt_22b();
  Split s = split(8, 1, 1, 4, 4);
  s.sequence_parallel = true;
  s.recompute = Recompute::kSelective;
  const double selective = layer_activation_bytes(m, s);
  s.recompute = Recompute::kNone;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, s), selective);
  s.fused_attention = false;
  EXPECT_GT(layer_activation_bytes(m, s), selective);
}

TEST(LlmSplitTest, TheFirstStageHoldsAsManyMicroBatchesAsTheScheduleKeepsInFlight) {
  const Transformer m = gpt_22b();
  Split s = split(8, 4, 1, 1, 16);  // 16 micro-batches on 4 stages
  s.recompute = Recompute::kSelective;
  s.sequence_parallel = true;
  const double per_layer = layer_activation_bytes(m, s);
  EXPECT_DOUBLE_EQ(gpu_memory(m, s).activations, 12 * 4 * per_layer);  // 1F1B: PP micro-batches of 12 layers
  s.schedule = Schedule::kGpipe;
  EXPECT_DOUBLE_EQ(gpu_memory(m, s).activations, 12 * 16 * per_layer);
  s.schedule = Schedule::kInterleaved;
  s.virtual_stages = 3;
  EXPECT_DOUBLE_EQ(gpu_memory(m, s).activations, 12 * 4 * (1 + 3.0 / 12) * per_layer);
}

TEST(LlmSplitTest, WeightsGradientsAndAdamAre18BytesAParameterOr6Plus12OverDpSharded) {
  const Transformer m = gpt_22b();
  Split s = split(8, 4, 16, 1, 64);
  const double p = stage_parameters(m, s, 0);
  EXPECT_DOUBLE_EQ(p, (12.0 * transformer::layer_parameters(m) + transformer::embedding_parameters(m)) / 8);
  const GpuMemory plain = gpu_memory(m, s);
  EXPECT_DOUBLE_EQ(plain.weights + plain.gradients + plain.optimizer, 18 * p);
  s.zero = 1;
  const GpuMemory sharded = gpu_memory(m, s);
  EXPECT_DOUBLE_EQ(sharded.weights + sharded.gradients + sharded.optimizer, (6 + 12.0 / 16) * p);
}

TEST(LlmSplitTest, EachBadSplitNamesItsField) {
  const Transformer m = gpt_22b();
  EXPECT_EQ(check_split(m, split(8, 4, 2, 1, 64), 128).message(),
            "dp 2: tp 8 x pp 4 x dp 2 is not the worker count 128");
  EXPECT_EQ(check_split(m, split(5, 1, 1, 1, 1), 5).message(), "tp 5: does not divide heads 64");
  EXPECT_EQ(check_split(m, split(8, 5, 1, 1, 5), 40).message(),
            "layers 48: do not divide into pp 5 x virtual_stages 1 equal chunks");
  EXPECT_EQ(check_split(m, split(8, 4, 2, 4, 12), 64).message(),
            "global_batch 12: is not a multiple of micro_batch 4 x dp 2");
  Split interleaved = split(8, 4, 1, 1, 6);
  interleaved.schedule = Schedule::kInterleaved;
  interleaved.virtual_stages = 2;
  EXPECT_EQ(check_split(m, interleaved, 32).message(),
            "global_batch 6: gives 6 micro-batches, not a multiple of pp 4 (the interleaved schedule's groups)");
  Split fp8 = split(8, 1, 1, 1, 1);
  fp8.precision = "fp32";
  EXPECT_EQ(check_split(m, fp8, 8).message(), "precision 'fp32': unknown (allowed: bf16, fp16, fp8)");
  EXPECT_TRUE(check_split(m, split(8, 4, 2, 2, 64), 64).is_ok());
}

TEST(LlmSplitTest, NamesRoundTrip) {
  for (Schedule s : {Schedule::kOneFOneB, Schedule::kInterleaved, Schedule::kGpipe})
    EXPECT_EQ(schedule_from_name(schedule_name(s)), s);
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
    EXPECT_EQ(recompute_from_name(recompute_name(r)), r);
  EXPECT_FALSE(schedule_from_name("zb-h1").has_value());
}

}  // namespace
}  // namespace clustertwin::models::llm
