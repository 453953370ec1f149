#include "models/transformer/stack_cost.h"

#include <algorithm>

namespace clustertwin::models::transformer {

std::vector<Gemm> layer_gemms(const Transformer& t) {
  const double h = static_cast<double>(t.hidden), f = static_cast<double>(ffn_of(t));
  const double qkv = static_cast<double>(t.hidden + 2 * kv_heads_of(t) * head_dim(t));
  return {{h, qkv, 1, true},                        // QKV, column-parallel
          {h, h, 1, false},                         // output projection, row-parallel
          {h, (t.gated_mlp ? 2 : 1) * f, 1, true},  // MLP up (gate and up), column-parallel
          {f, h, 1, false}};                        // MLP down, row-parallel
}

Gemm head_gemm(const Transformer& t) {
  return {static_cast<double>(t.hidden), static_cast<double>(t.vocab), 1, true};
}

double gemm_seconds(double tokens, const Gemm& g, int tp, const DeviceRates& d) {
  const double in = g.split_out ? g.in : g.in / tp, out = g.split_out ? g.out / tp : g.out;
  const double flops = 6 * (tokens * g.token_share) * in * out;  // 3 x 2 T K N
  const double efficiency = d.gemm_curve.empty() ? d.gemm_efficiency : d.gemm_curve.at(flops);
  return g.count * (flops / ((d.gemm_peak_flops > 0 ? d.gemm_peak_flops : d.peak_flops) * efficiency));
}

double attention_efficiency(double seq_len, bool causal, const DeviceRates& d) {
  if (d.attention_curve.empty()) return d.attention_efficiency;
  const device::EfficiencyCurve& c =
      !causal && !d.attention_full_curve.empty() ? d.attention_full_curve : d.attention_curve;
  return c.at(std::max(1.0, seq_len));
}

double attention_flops(const Transformer& t, double seq_len, double tokens, bool causal) {
  return (causal ? 1 : 2) * (3 * 2 * seq_len * static_cast<double>(t.hidden) * tokens);
}

namespace {

// Forward + backward of one layer's GEMMs at TP `tp`.
double layer_gemm_seconds(const Transformer& t, double tokens, int tp, const DeviceRates& d) {
  double seconds = 0;
  for (const Gemm& g : layer_gemms(t))
    seconds += gemm_seconds(tokens, g, tp, d);
  return seconds;
}

// Forward + backward of one layer's causal attention over sequences of t.seq.
double layer_attention_seconds(const Transformer& t, double tokens, int tp, const DeviceRates& d) {
  const double seq = static_cast<double>(t.seq);
  return attention_flops(t, seq, tokens, true) / tp / (d.peak_flops * attention_efficiency(seq, true, d));
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
  const double s = gemm_seconds(tokens, head_gemm(t), tp, d);
  return {s / 3, 2 * s / 3};
}

double adam_seconds(double parameters, const DeviceRates& d) {
  return parameters * kAdamBytesPerParameter / d.memory_bandwidth;
}

StackWork& StackWork::operator+=(const StackWork& o) {
  if (gemms.empty()) {
    gemms = o.gemms;
    layers = o.layers;
    hidden = o.hidden;
  }
  tokens += o.tokens;
  attention_flops += o.attention_flops;
  attention_effective_flops += o.attention_effective_flops;
  return *this;
}

double StackWork::flops() const {
  double f = attention_flops;
  for (const Gemm& g : gemms)
    f += g.count * 6 * tokens * g.token_share * g.in * g.out;
  return f;
}

StackWork sequence_work(const Transformer& t, double seq_len, bool causal, const DeviceRates& d) {
  StackWork w;
  w.tokens = seq_len;
  w.layers = t.layers;
  w.hidden = t.hidden;
  w.gemms = layer_gemms(t);
  for (Gemm& g : w.gemms)
    g.count = static_cast<double>(t.layers);
  if (t.vocab > 0) w.gemms.push_back(head_gemm(t));
  w.attention_flops = static_cast<double>(t.layers) * attention_flops(t, seq_len, seq_len, causal);
  w.attention_effective_flops = w.attention_flops / attention_efficiency(seq_len, causal, d);
  return w;
}

StackWork scaled(StackWork w, double factor) {
  w.tokens *= factor;
  w.attention_flops *= factor;
  w.attention_effective_flops *= factor;
  return w;
}

StackWork stage_work(StackWork w, int stages) {
  for (Gemm& g : w.gemms)
    g.count /= stages;
  w.attention_flops /= stages;
  w.attention_effective_flops /= stages;
  w.layers = std::max<int64_t>(1, w.layers / stages);
  return w;
}

PassSeconds stack_passes(const StackWork& w, int tp, bool sequence_parallel, const DeviceRates& d) {
  if (w.tokens <= 0) return {};
  double gemms = 0;
  for (const Gemm& g : w.gemms)
    gemms += gemm_seconds(w.tokens, g, tp, d);
  const double flop_terms = gemms + w.attention_effective_flops / (tp * d.peak_flops);
  const double layers = static_cast<double>(w.layers);
  const double elementwise = kElementwiseBytes * w.tokens * static_cast<double>(w.hidden) * layers /
                             ((sequence_parallel ? tp : 1) * d.memory_bandwidth);
  const double overhead = layers * d.layer_overhead_s;
  return {flop_terms / 3 + elementwise / 2 + overhead, 2 * flop_terms / 3 + elementwise / 2 + overhead};
}

double stack_seconds(const StackWork& w, int tp, bool sequence_parallel, const DeviceRates& d) {
  const PassSeconds p = stack_passes(w, tp, sequence_parallel, d);
  return p.forward + p.backward;
}

}  // namespace clustertwin::models::transformer
