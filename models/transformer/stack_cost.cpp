#include "models/transformer/stack_cost.h"

namespace clustertwin::models::transformer {
namespace {

// Forward + backward of one GEMM of `tokens` x `in` -> `out`: 3 x 2 T K N FLOPs at the device's share of peak.
double gemm_seconds(double tokens, double in, double out, const DeviceRates& d) {
  const double flops = 6 * tokens * in * out;
  const double efficiency = d.gemm_curve.empty() ? d.gemm_efficiency : d.gemm_curve.at(flops);
  return flops / ((d.gemm_peak_flops > 0 ? d.gemm_peak_flops : d.peak_flops) * efficiency);
}

// Forward + backward of one layer's GEMMs at TP `tp`: column-parallel QKV and MLP up, row-parallel projections.
double layer_gemm_seconds(const Transformer& t, double tokens, int tp, const DeviceRates& d) {
  const double h = static_cast<double>(t.hidden), f = static_cast<double>(ffn_of(t));
  const double qkv = static_cast<double>(t.hidden + 2 * kv_heads_of(t) * head_dim(t));
  const double up = (t.gated_mlp ? 2 : 1) * f;
  return gemm_seconds(tokens, h, qkv / tp, d) + gemm_seconds(tokens, h / tp, h, d) +
         gemm_seconds(tokens, h, up / tp, d) + gemm_seconds(tokens, f / tp, h, d);
}

// Forward + backward of one layer's causal attention.
double layer_attention_seconds(const Transformer& t, double tokens, int tp, const DeviceRates& d) {
  const double causal_flops = 3 * 2 * static_cast<double>(t.seq) * static_cast<double>(t.hidden) * tokens / tp;
  const double efficiency =
      d.attention_curve.empty() ? d.attention_efficiency : d.attention_curve.at(static_cast<double>(t.seq));
  return causal_flops / (d.peak_flops * efficiency);
}

}  // namespace

PassSeconds layer_seconds(const Transformer& t, int64_t layers, double tokens, int tp, bool sequence_parallel,
                          const DeviceRates& d) {
  const double n = static_cast<double>(layers);
  const double flop_terms = n * (layer_gemm_seconds(t, tokens, tp, d) + layer_attention_seconds(t, tokens, tp, d));
  const double elementwise = n * kElementwiseBytes * tokens * static_cast<double>(t.hidden) /
                             (sequence_parallel ? tp : 1) / d.memory_bandwidth;
  const double overhead = n * d.layer_overhead_s;
  return {flop_terms / 3 + elementwise / 2 + overhead, 2 * flop_terms / 3 + elementwise / 2 + overhead};
}

double attention_forward_seconds(const Transformer& t, int64_t layers, double tokens, int tp, const DeviceRates& d) {
  return static_cast<double>(layers) * layer_attention_seconds(t, tokens, tp, d) / 3;
}

PassSeconds head_seconds(const Transformer& t, double tokens, int tp, const DeviceRates& d) {
  const double s = gemm_seconds(tokens, static_cast<double>(t.hidden), static_cast<double>(t.vocab) / tp, d);
  return {s / 3, 2 * s / 3};
}

double adam_seconds(double parameters, const DeviceRates& d) {
  return parameters * kAdamBytesPerParameter / d.memory_bandwidth;
}

}  // namespace clustertwin::models::transformer
