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

}  // namespace
}  // namespace clustertwin::models::transformer
