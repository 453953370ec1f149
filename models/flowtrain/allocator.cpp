#include "models/flowtrain/allocator.h"

#include <algorithm>
#include <cmath>

namespace clustertwin::flowtrain {
namespace {

constexpr double kTpEfficiencyPerDoubling = 0.94;
constexpr double kStateBytesSharded = 4;     // bf16 weights and gradients, over TP x PP
constexpr double kStateBytesOptimizer = 12;  // fp32 master weights and two moments, over TP x PP x DP
constexpr double kKeptPerTokenLayer = 2;     // recomputation keeps each layer's bf16 input
constexpr double kLivePerToken = 34;         // one layer's activations while it runs (x hidden)

double efficiency(double base, int tp, int pp, double micro_batches) {
  return base * std::pow(kTpEfficiencyPerDoubling, std::log2(static_cast<double>(tp))) * micro_batches /
         (micro_batches + pp - 1);
}

double state_bytes(double params, int tp, int pp, int dp) {
  return params * (kStateBytesSharded / (tp * pp) + kStateBytesOptimizer / (static_cast<double>(tp) * pp * dp));
}

}  // namespace

void set_dataset_means(AllocatorInputs* in, const DatasetOptions& options, int samples) {
  in->encoder_flops = in->backbone_flops = in->images = in->llm_tokens = 0;
  for (int i = 0; i < samples; ++i) {
    const Sample s = dataset_sample(options, i);
    const SampleCost c = sample_cost(in->model, s);
    in->encoder_flops += c.encoder_flops / samples;
    in->backbone_flops += c.backbone_flops / samples;
    in->images += static_cast<double>(s.images) / samples;
    in->llm_tokens += static_cast<double>(c.llm_tokens) / samples;
  }
}

SideLayout best_encoder_layout(const AllocatorInputs& in, int devices) {
  SideLayout best;
  best.devices = devices;
  const spec::VitSpec& v = in.model.encoder;
  const double params = static_cast<double>(v.params() + in.model.projector_params());
  for (int tp = 1; tp <= std::min(devices, in.devices_per_node); tp *= 2) {
    if (devices % tp != 0) continue;
    const int dp = devices / tp;
    const double tokens = static_cast<double>(in.micro_batch_images) * static_cast<double>(v.patches());
    const double memory =
        state_bytes(params, tp, 1, dp) + tokens * static_cast<double>(v.hidden) *
                                             (kKeptPerTokenLayer * static_cast<double>(v.layers) + kLivePerToken) / tp;
    if (memory > in.memory_bytes) continue;
    const double eff = efficiency(in.base_efficiency, tp, 1, 1);
    const double rate = in.encoder_flops > 0 ? devices * in.peak_flops * eff / in.encoder_flops : 0;
    if (rate > best.rate) best = SideLayout{devices, tp, 1, dp, eff, memory, rate};
  }
  return best;
}

SideLayout best_backbone_layout(const AllocatorInputs& in, int devices) {
  SideLayout best;
  best.devices = devices;
  const spec::LlmSpec& m = in.model.backbone;
  const double params = static_cast<double>(m.params());
  for (int tp = 1; tp <= std::min(devices, in.devices_per_node); tp *= 2) {
    for (int pp = 1; tp * pp <= devices && pp <= m.layers; pp *= 2) {
      if (devices % (tp * pp) != 0) continue;
      const int dp = devices / (tp * pp);
      // Micro-batches per pipeline and step; 1F1B keeps PP of them in flight.
      const double micro =
          std::max(1.0, in.global_batch * in.llm_tokens / (static_cast<double>(in.micro_batch_tokens) * dp));
      const double in_flight = std::min(micro, static_cast<double>(pp));
      const double tokens = static_cast<double>(in.micro_batch_tokens);
      const double kept =
          in_flight * tokens * static_cast<double>(m.hidden) * kKeptPerTokenLayer * static_cast<double>(m.layers) / pp;
      const double memory =
          state_bytes(params, tp, pp, dp) + (kept + tokens * static_cast<double>(m.hidden) * kLivePerToken) / tp;
      if (memory > in.memory_bytes) continue;
      const double eff = efficiency(in.base_efficiency, tp, pp, micro);
      const double rate = in.backbone_flops > 0 ? devices * in.peak_flops * eff / in.backbone_flops : 0;
      if (rate > best.rate) best = SideLayout{devices, tp, pp, dp, eff, memory, rate};
    }
  }
  return best;
}

StatusOr<Allocation> allocate(const AllocatorInputs& in) {
  if (in.workers < 2) {
    return Status::invalid_argument("workers " + std::to_string(in.workers) +
                                    ": the split needs at least 2 (an encoder worker and a backbone worker)");
  }
  if (in.encoder_workers == 0 || in.encoder_workers >= in.workers) {
    return Status::invalid_argument("encoder workers " + std::to_string(in.encoder_workers) + " of " +
                                    std::to_string(in.workers) + ": each side needs at least one worker (1.." +
                                    std::to_string(in.workers - 1) + ")");
  }
  if (!(in.peak_flops > 0) || !(in.memory_bytes > 0) || in.devices_per_node < 1) {
    return Status::invalid_argument("allocator: the device's peak FLOP/s, memory and devices per node must be > 0");
  }
  if (!(in.encoder_flops > 0) || !(in.backbone_flops > 0) || !(in.llm_tokens > 0) || in.global_batch < 1 ||
      in.micro_batch_tokens < 1 || in.micro_batch_images < 1) {
    return Status::invalid_argument(
        "allocator: per-sample costs, the global batch and the micro-batch sizes must "
        "be > 0");
  }
  Allocation best;
  const int first = in.encoder_workers > 0 ? in.encoder_workers : 1;
  const int last = in.encoder_workers > 0 ? in.encoder_workers : in.workers - 1;
  for (int e = first; e <= last; ++e) {
    ++best.splits_evaluated;
    const SideLayout enc = best_encoder_layout(in, e);
    const SideLayout llm = best_backbone_layout(in, in.workers - e);
    const double rate = std::min(enc.rate, llm.rate);
    if (rate > best.rate) {
      best.encoder = enc;
      best.backbone = llm;
      best.rate = rate;
    }
  }
  if (!(best.rate > 0)) {
    return Status::invalid_argument("allocator: no split of " + std::to_string(in.workers) + " workers fits " +
                                    in.model.name + " in " + std::to_string(in.memory_bytes / 1e9) +
                                    " GB per device on both sides");
  }
  return best;
}

}  // namespace clustertwin::flowtrain
