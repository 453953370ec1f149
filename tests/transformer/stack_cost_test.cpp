// models/transformer/stack_cost.h: the compute terms of a layer's passes.

#include "models/transformer/stack_cost.h"

#include <gtest/gtest.h>

namespace clustertwin::models::transformer {
namespace {

DeviceRates flat_device() {
  DeviceRates d;
  d.peak_flops = 1e15;
  d.memory_bandwidth = 2e12;
  d.gemm_efficiency = 0.5;
  d.attention_efficiency = 0.25;
  return d;
}

TEST(StackCostTest, APassIsItsGemmsAttentionAndElementwiseTerms) {
  const Transformer t{1024, 16, 0, 0, 8, 2048, 51200, false};
  const DeviceRates d = flat_device();
  const double tokens = 4 * 2048.0;
  const PassSeconds one = layer_seconds(t, 1, tokens, 1, false, d);
  const double gemms = 6 * tokens * static_cast<double>(layer_weights(t)) / (1e15 * 0.5);
  const double attention = 3 * 2 * 2048.0 * 1024 * tokens / (1e15 * 0.25);
  const double elementwise = kElementwiseBytes * tokens * 1024 / 2e12;
  EXPECT_NEAR(one.forward + one.backward, gemms + attention + elementwise, 1e-15);
  EXPECT_NEAR(one.backward - one.forward, (gemms + attention) / 3, 1e-15);
  EXPECT_NEAR(attention_forward_seconds(t, 1, tokens, 1, d), attention / 3, 1e-15);
}

TEST(StackCostTest, TensorParallelismSplitsTheFlopsAndSequenceParallelismTheElementwiseWork) {
  const Transformer t{4096, 32, 0, 0, 4, 2048, 51200, false};
  DeviceRates d = flat_device();
  const PassSeconds alone = layer_seconds(t, 4, 8192, 1, false, d);
  d.memory_bandwidth = 1e30;  // elementwise free: what is left splits over TP exactly
  const PassSeconds flops_only = layer_seconds(t, 4, 8192, 1, false, d);
  const PassSeconds tp4 = layer_seconds(t, 4, 8192, 4, false, d);
  EXPECT_NEAR(tp4.forward * 4, flops_only.forward, 1e-12);
  d.memory_bandwidth = 2e12;
  const double elementwise = alone.forward + alone.backward - flops_only.forward - flops_only.backward;
  const PassSeconds sp = layer_seconds(t, 4, 8192, 4, true, d), no_sp = layer_seconds(t, 4, 8192, 4, false, d);
  EXPECT_NEAR((no_sp.forward + no_sp.backward) - (sp.forward + sp.backward), elementwise * 3 / 4, 1e-12);
}

TEST(StackCostTest, AMeasuredCurvePricesEachGemmAtItsSize) {
  const Transformer t{1024, 16, 0, 0, 1, 1024, 51200, false};
  DeviceRates d = flat_device();
  const double constant = head_seconds(t, 1024, 1, d).forward;
  // A curve flat at the constant's efficiency gives the same time; one at half of it twice the time.
  d.gemm_curve = *device::EfficiencyCurve::make({{1, 0.25}}, "test");
  EXPECT_NEAR(head_seconds(t, 1024, 1, d).forward, 2 * constant, 1e-15);
  EXPECT_NEAR(adam_seconds(1e9, d), 1e9 * kAdamBytesPerParameter / 2e12, 1e-15);
}

// The two ways to ask are one model: a set of sequences of one length priced
// as a StackWork takes what layer_seconds and head_seconds give them.
TEST(StackWorkTest, SequencesOfOneLengthCostWhatTheirLayersAndHeadCost) {
  const Transformer t{2048, 16, 4, 5632, 12, 1024, 32000, true};
  DeviceRates d = flat_device();
  d.layer_overhead_s = 1e-5;
  d.gemm_curve = *device::EfficiencyCurve::make({{1e10, 0.3}, {1e13, 0.7}}, "test");
  d.attention_curve = *device::EfficiencyCurve::make({{512, 0.2}, {8192, 0.6}}, "test");
  StackWork three = sequence_work(t, 1024, true, d);
  three += sequence_work(t, 1024, true, d);
  three += sequence_work(t, 1024, true, d);
  EXPECT_DOUBLE_EQ(three.tokens, 3 * 1024.0);
  for (int tp : {1, 4}) {
    const PassSeconds layers = layer_seconds(t, t.layers, three.tokens, tp, true, d);
    const PassSeconds head = head_seconds(t, three.tokens, tp, d);
    const PassSeconds w = stack_passes(three, tp, true, d);
    EXPECT_NEAR(w.forward, layers.forward + head.forward, 1e-12 * w.forward) << "tp " << tp;
    EXPECT_NEAR(w.backward, layers.backward + head.backward, 1e-12 * w.backward) << "tp " << tp;
    EXPECT_DOUBLE_EQ(stack_seconds(three, tp, true, d), w.forward + w.backward);
  }
  // Its FLOPs: the model FLOPs of three sequences, but for attention's causal half.
  const double causal_half = 3 * 3 * 2 * 1024.0 * 2048 * 1024 * 12;
  EXPECT_NEAR(three.flops() + causal_half, model_flops_per_step(t, 3), 1e-12 * three.flops());
}

TEST(StackWorkTest, FullAttentionIsTwiceCausalAndStagesSplitTheLayers) {
  const Transformer vit{1024, 16, 0, 4096, 24, 1024, 0, false};
  const DeviceRates d = flat_device();
  const StackWork full = sequence_work(vit, 1024, false, d), causal = sequence_work(vit, 1024, true, d);
  EXPECT_DOUBLE_EQ(full.attention_flops, 2 * causal.attention_flops);
  EXPECT_EQ(full.gemms.size(), 4u);  // vocab 0: no LM head
  const StackWork stage = stage_work(full, 4);
  EXPECT_EQ(stage.layers, 6);
  EXPECT_NEAR(stack_seconds(stage, 2, true, d), stack_seconds(full, 2, true, d) / 4, 1e-15);
  // scaled: a share of the tokens and attention, the same shapes.
  EXPECT_NEAR(stack_seconds(scaled(full, 0.5), 1, false, d), stack_seconds(full, 1, false, d) / 2, 1e-15);
  // A GEMM on a quarter of the tokens costs what a quarter of its width does on all of them.
  const Gemm quarter{4096, 2048, 1, true, 0.25}, narrow{1024, 2048, 1, true, 1};
  EXPECT_NEAR(gemm_seconds(8192, quarter, 2, d), gemm_seconds(8192, narrow, 2, d), 1e-18);
}

}  // namespace
}  // namespace clustertwin::models::transformer
