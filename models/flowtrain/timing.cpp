#include "models/flowtrain/timing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"

namespace clustertwin::models::flowtrain {

StackWork encoder_work(const VlmSpec& model, int images, const DeviceModel& device) {
  const spec::VitSpec& v = model.encoder;
  const double n = static_cast<double>(v.patches());
  StackWork w = transformer::scaled(
      transformer::sequence_work(transformer::from_vit_spec(v), n, /*causal=*/false, device), images);
  const double h = static_cast<double>(v.hidden), p = static_cast<double>(v.patch);
  const double llm = static_cast<double>(model.backbone.hidden);
  w.gemms.push_back({3 * p * p, h, 1, true});  // patch embedding, every patch
  // The projector after the 2 x 2 pixel shuffle: a quarter of the patches as tokens of 4 h.
  w.gemms.push_back({4 * h, llm, 1, true, 0.25});
  w.gemms.push_back({llm, llm, 1, false, 0.25});
  return w;
}

StackWork backbone_work(const VlmSpec& model, int64_t llm_tokens, const DeviceModel& device) {
  return transformer::sequence_work(transformer::from_llm_spec(model.backbone), static_cast<double>(llm_tokens),
                                    /*causal=*/true, device);
}

double tp_exchange_seconds(const StackWork& w, int tp, const DeviceModel& d) {
  if (tp <= 1 || w.tokens <= 0) return 0;
  const double bytes = w.tokens * static_cast<double>(w.hidden) * 2;
  const double ring = 2.0 * (tp - 1) / tp * bytes / d.link_bandwidth + 2.0 * (tp - 1) * d.link_latency_s;
  return 4 * static_cast<double>(w.layers) * ring;
}

double stack_seconds(const StackWork& w, int tp, const DeviceModel& d) {
  if (w.tokens <= 0) return 0;
  return transformer::stack_seconds(w, tp, /*sequence_parallel=*/true, d) +
         (1 - d.tp_overlap) * tp_exchange_seconds(w, tp, d);
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
