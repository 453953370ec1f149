// FlowTrain's cost model (models/flowtrain/timing.h): the 1F1B pipeline's
// makespan against its closed forms, a slow stage setting the pace, and the
// stack's time: its FLOPs equal sample_cost's, tensor parallelism's exchange.

#include "models/flowtrain/timing.h"

#include <gtest/gtest.h>

#include <vector>

namespace clustertwin::models::flowtrain {
namespace {

std::vector<std::vector<double>> uniform(int micro_batches, int stages, double t) {
  return std::vector<std::vector<double>>(micro_batches, std::vector<double>(stages, t));
}

TEST(PipelineMakespanTest, OneStageIsTheSum) {
  std::vector<std::vector<double>> f = {{1}, {2}, {3}}, b = {{2}, {4}, {6}};
  EXPECT_DOUBLE_EQ(pipeline_makespan(f, b), 18);
  EXPECT_DOUBLE_EQ(pipeline_makespan({}, {}), 0);
}

TEST(PipelineMakespanTest, UniformStagesGiveTheFillAndDrainFormula) {
  // 1F1B with equal stages: (m + p - 1) x (forward + backward).
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 3, 8, 16}) {
      EXPECT_NEAR(pipeline_makespan(uniform(m, p, 1), uniform(m, p, 2)), (m + p - 1) * 3.0, 1e-9)
          << "p " << p << " m " << m;
    }
  }
}

TEST(PipelineMakespanTest, ASlowFirstStageSetsThePace) {
  // The monolithic baseline's shape: the first stage also runs the encoder.
  const int m = 12, p = 4;
  auto f = uniform(m, p, 1), b = uniform(m, p, 2);
  for (int j = 0; j < m; ++j) {
    f[j][0] += 1;
    b[j][0] += 2;
  }
  const double makespan = pipeline_makespan(f, b);
  EXPECT_GE(makespan, m * 6.0);  // the first stage's own work
  EXPECT_GT(makespan, pipeline_makespan(uniform(m, p, 1), uniform(m, p, 2)));
  EXPECT_LE(makespan, m * 6.0 + (p - 1) * 3.0 + 1e-9);  // plus at most one fill and drain
}

TEST(StackTimeTest, WorkMatchesSampleCostAndTensorParallelismCostsAnExchange) {
  const VlmSpec model = *vlm_spec("6B+72B");
  const Sample s{7, 3, 900};
  const SampleCost c = sample_cost(model, s);
  const StackWork enc = encoder_work(model, s.images, DeviceModel{}),
                  llm = backbone_work(model, c.llm_tokens, DeviceModel{});
  // The priced FLOPs are the model FLOPs but for biases and norms (and the backbone's attention over s^2 / 2
  // pairs, not s (s - 1) / 2): within 0.01%.
  EXPECT_NEAR(enc.flops(), c.encoder_flops, 1e-4 * c.encoder_flops);
  EXPECT_NEAR(llm.flops(), c.backbone_flops, 1e-4 * c.backbone_flops);
  EXPECT_LT(llm.flops(), c.backbone_flops);  // no bias or norm is a GEMM
  EXPECT_DOUBLE_EQ(llm.tokens, static_cast<double>(c.llm_tokens));

  DeviceModel d;
  d.peak_flops = 989.5e12;
  d.memory_bandwidth = 3.35e12;
  d.link_bandwidth = 450e9;
  d.link_latency_s = 1e-6;
  d.tp_overlap = 0;
  EXPECT_EQ(tp_exchange_seconds(llm, 1, d), 0);
  // TP 1: the backbone's layers as the LLM twin prices them (one sequence of the sample's tokens), its LM head.
  const double tp1 = stack_seconds(llm, 1, d);
  transformer::Transformer t = transformer::from_llm_spec(model.backbone);
  t.seq = c.llm_tokens;
  const transformer::PassSeconds layers = transformer::layer_seconds(t, t.layers, llm.tokens, 1, true, d),
                                 head = transformer::head_seconds(t, llm.tokens, 1, d);
  const double expected = layers.forward + layers.backward + head.forward + head.backward;
  EXPECT_NEAR(tp1, expected, 1e-12 * expected);
  // With constant efficiencies: FLOPs at their shares of peak, and the elementwise passes.
  const double attention = llm.attention_flops / (d.peak_flops * d.attention_efficiency);
  const double elementwise =
      transformer::kElementwiseBytes * llm.tokens * static_cast<double>(llm.hidden * llm.layers) / d.memory_bandwidth;
  EXPECT_NEAR(tp1, (llm.flops() - llm.attention_flops) / (d.peak_flops * d.gemm_efficiency) + attention + elementwise,
              1e-12 * tp1);
  // TP 8: an eighth of that plus the exchange: 4 rings a layer of tokens x hidden x 2 bytes.
  const double ring = 2.0 * 7 / 8 * llm.tokens * static_cast<double>(llm.hidden) * 2 / d.link_bandwidth + 14e-6;
  EXPECT_NEAR(tp_exchange_seconds(llm, 8, d), 4 * static_cast<double>(llm.layers) * ring, 1e-12);
  EXPECT_NEAR(stack_seconds(llm, 8, d), tp1 / 8 + 4 * static_cast<double>(llm.layers) * ring, 1e-9);
  d.tp_overlap = 1;
  EXPECT_NEAR(stack_seconds(llm, 8, d), tp1 / 8, 1e-9);
  // A stage of a 4-stage pipeline: a quarter of the layers and FLOPs, every token.
  const StackWork stage = stage_work(llm, 4);
  EXPECT_EQ(stage.layers, llm.layers / 4);
  EXPECT_DOUBLE_EQ(stage.tokens, llm.tokens);
  EXPECT_NEAR(stack_seconds(stage, 8, d), stack_seconds(llm, 8, d) / 4, 1e-9);
}

// With a device profile's curves, each GEMM shape of the stack is priced at
// the curve's efficiency for its own size; attention at each sequence's own
// length.
TEST(StackTimeTest, MeasuredCurvesPriceEachGemmShapeAndSequenceLength) {
  const VlmSpec model = *vlm_spec("6B+72B");
  DeviceModel d;
  d.peak_flops = 989.5e12;
  d.memory_bandwidth = 3.35e12;
  d.link_bandwidth = 450e9;
  d.link_latency_s = 1e-6;
  // A one-knot curve is a constant: the stack time equals the constant model's at that efficiency.
  DeviceModel flat = d;
  flat.gemm_curve = *device::EfficiencyCurve::make({{1e12, 0.7}}, "test");
  flat.attention_curve = *device::EfficiencyCurve::make({{4096, 0.35}}, "test");
  DeviceModel constant = d;
  constant.gemm_efficiency = 0.7;
  constant.attention_efficiency = 0.35;
  const StackWork llm = backbone_work(model, 4096, flat);
  EXPECT_NEAR(stack_seconds(llm, 8, flat), stack_seconds(backbone_work(model, 4096, constant), 8, constant),
              1e-12 * stack_seconds(llm, 8, constant));

  // Two knots: shapes below 1e11 FLOPs at 0.5, above 1e13 at 0.8.
  DeviceModel curve = d;
  curve.tp_overlap = 1;
  curve.memory_bandwidth = 1e30;  // elementwise free: GEMMs and attention alone
  curve.gemm_curve = *device::EfficiencyCurve::make({{1e11, 0.5}, {1e13, 0.8}}, "test");
  curve.attention_curve = *device::EfficiencyCurve::make({{1024, 0.15}, {16384, 0.5}}, "test");
  const StackWork w = backbone_work(model, 16384, curve);
  double gemm_s = 0;
  for (const transformer::Gemm& g : w.gemms) {
    const double in = g.split_out ? g.in : g.in / 8, out = g.split_out ? g.out / 8 : g.out;
    gemm_s += g.count * 6 * 16384 * in * out / (curve.peak_flops * curve.gemm_curve.at(6 * 16384 * in * out));
  }
  EXPECT_NEAR(stack_seconds(w, 8, curve), gemm_s + w.attention_flops / 0.5 / (8 * curve.peak_flops), 1e-12 * gemm_s);
  // Attention: the sequence's own length, 16384 tokens -> the last knot's 0.5; the encoder's full attention
  // over 1024 patches falls back to the causal curve's first knot (no full curve).
  EXPECT_DOUBLE_EQ(w.attention_effective_flops, w.attention_flops / 0.5);
  const StackWork enc = encoder_work(model, 2, curve);
  EXPECT_DOUBLE_EQ(enc.attention_effective_flops, enc.attention_flops / 0.15);
  // Additive over samples: two sequences keep each one's own efficiency.
  StackWork two = backbone_work(model, 1024, curve);
  two += w;
  EXPECT_DOUBLE_EQ(two.attention_effective_flops,
                   backbone_work(model, 1024, curve).attention_flops / 0.15 + w.attention_flops / 0.5);
}

}  // namespace
}  // namespace clustertwin::models::flowtrain
