#include "models/flowtrain/timing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"

namespace clustertwin::models::flowtrain {

StackWork scaled(StackWork w, double factor) {
  w.gemm_flops *= factor;
  w.attention_flops *= factor;
  w.attention_effective_flops *= factor;
  w.tokens *= factor;
  return w;
}

StackWork stage_work(StackWork w, int stages) {
  w.gemm_flops /= stages;
  w.attention_flops /= stages;
  w.attention_effective_flops /= stages;
  w.layers = std::max<int64_t>(1, w.layers / stages);
  return w;
}

StackWork encoder_work(const VlmSpec& model, int images, const DeviceModel& device) {
  const spec::VitSpec& v = model.encoder;
  const double n = static_cast<double>(v.patches()), h = static_cast<double>(v.hidden);
  const double attention = static_cast<double>(v.layers) * 4 * h * n * n;
  const double projector =
      2.0 * static_cast<double>(model.projector_params()) * static_cast<double>(v.tokens_per_image());
  StackWork w;
  w.layers = v.layers;
  w.hidden = v.hidden;
  w.tokens = n * images;
  w.attention_flops = 3 * attention * images;
  w.gemm_flops = 3 * (v.forward_flops_per_image() - attention + projector) * images;
  w.attention_effective_flops = w.attention_flops / attention_efficiency(n, false, device);
  const double hv = h, f = static_cast<double>(v.mlp), l = static_cast<double>(v.layers);
  w.gemms = {{hv, 3 * hv, l, true}, {hv, hv, l, false}, {hv, f, l, true}, {f, hv, l, false}};
  return w;
}

StackWork backbone_work(const VlmSpec& model, int64_t llm_tokens, const DeviceModel& device) {
  const spec::LlmSpec& m = model.backbone;
  const double fixed = m.forward_flops_per_token(0);
  const double per_context = m.forward_flops_per_token(1) - fixed;
  const double t = static_cast<double>(llm_tokens);
  StackWork w;
  w.layers = m.layers;
  w.hidden = m.hidden;
  w.tokens = t;
  w.gemm_flops = 3 * t * fixed;
  w.attention_flops = 3 * per_context * t * (t - 1) / 2;
  w.attention_effective_flops = w.attention_flops / attention_efficiency(t, true, device);
  const double h = static_cast<double>(m.hidden), l = static_cast<double>(m.layers);
  const double q = static_cast<double>(m.heads * m.head_dim), kv = static_cast<double>(m.kv_heads * m.head_dim);
  const double f = static_cast<double>(m.mlp);
  w.gemms = {{h, q + 2 * kv, l, true},                     // QKV
             {q, h, l, false},                             // output projection
             {h, 2 * f, l, true},                          // SwiGLU gate and up
             {f, h, l, false},                             // down
             {h, static_cast<double>(m.vocab), 1, true}};  // LM head (vocabulary-parallel)
  return w;
}

double tp_exchange_seconds(const StackWork& w, int tp, const DeviceModel& d) {
  if (tp <= 1 || w.tokens <= 0) return 0;
  const double bytes = w.tokens * static_cast<double>(w.hidden) * 2;
  const double ring = 2.0 * (tp - 1) / tp * bytes / d.link_bandwidth + 2.0 * (tp - 1) * d.link_latency_s;
  return 4 * static_cast<double>(w.layers) * ring;
}

double gemm_efficiency(const StackWork& w, int tp, const DeviceModel& d) {
  if (d.gemm_curve.empty()) return d.gemm_efficiency;
  CT_CHECK(!w.gemms.empty()) << "a stack priced by a GEMM curve needs its GEMM shapes";
  double flops = 0, seconds_at_peak = 0;
  for (const StackGemm& g : w.gemms) {
    const double in = g.split_out ? g.in : g.in / tp, out = g.split_out ? g.out / tp : g.out;
    const double weight = g.count * in * out;  // the shape's share of the stack's GEMM FLOPs
    flops += weight;
    seconds_at_peak += weight / d.gemm_curve.at(6 * w.tokens * in * out);
  }
  return flops / seconds_at_peak;
}

double attention_efficiency(double seq_len, bool causal, const DeviceModel& d) {
  if (d.attention_curve.empty()) return d.attention_efficiency;
  const device::EfficiencyCurve& c =
      !causal && !d.attention_full_curve.empty() ? d.attention_full_curve : d.attention_curve;
  return c.at(std::max(1.0, seq_len));
}

double stack_seconds(const StackWork& w, int tp, const DeviceModel& d) {
  if (w.tokens <= 0) return 0;
  // Without a device profile, exactly the constant efficiencies' arithmetic.
  const double attention =
      d.attention_curve.empty() ? w.attention_flops / d.attention_efficiency : w.attention_effective_flops;
  const double compute = (w.gemm_flops / gemm_efficiency(w, tp, d) + attention) / (tp * d.peak_flops);
  const double elementwise =
      kElementwiseBytes * w.tokens * static_cast<double>(w.hidden * w.layers) / (tp * d.memory_bandwidth);
  return compute + elementwise + (1 - d.tp_overlap) * tp_exchange_seconds(w, tp, d);
}

double pipeline_makespan(const std::vector<std::vector<double>>& forward,
                         const std::vector<std::vector<double>>& backward) {
  const int m = static_cast<int>(forward.size());
  if (m == 0) return 0;
  const int p = static_cast<int>(forward[0].size());
  CT_CHECK(p >= 1 && backward.size() == forward.size());
  // Each stage's op list in 1F1B order: +j+1 for forward j, -(j+1) for backward j.
  std::vector<std::vector<int>> order(p);
  for (int s = 0; s < p; ++s) {
    const int warmup = std::min(p - s - 1, m);
    for (int j = 0; j < warmup; ++j)
      order[s].push_back(j + 1);
    for (int i = 0; i < m - warmup; ++i) {
      order[s].push_back(warmup + i + 1);
      order[s].push_back(-(i + 1));
    }
    for (int j = m - warmup; j < m; ++j)
      order[s].push_back(-(j + 1));
  }
  constexpr double kNotYet = -1;
  std::vector<std::vector<double>> f_end(m, std::vector<double>(p, kNotYet)), b_end = f_end;
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  size_t remaining = static_cast<size_t>(2 * m * p);
  while (remaining > 0) {
    bool progressed = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < order[s].size()) {
        const int op = order[s][next[s]];
        const int j = std::abs(op) - 1;
        double ready;
        if (op > 0) {
          ready = s == 0 ? 0 : f_end[j][s - 1];
        } else {
          ready = s == p - 1 ? f_end[j][s] : b_end[j][s + 1];
        }
        if (ready == kNotYet) break;
        const double start = std::max(ready, free_at[s]);
        const double end = start + (op > 0 ? forward[j][s] : backward[j][s]);
        (op > 0 ? f_end : b_end)[j][s] = end;
        free_at[s] = end;
        ++next[s];
        --remaining;
        progressed = true;
      }
    }
    CT_CHECK(progressed);  // 1F1B's order has no cycle
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace clustertwin::models::flowtrain
