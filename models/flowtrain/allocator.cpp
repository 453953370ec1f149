#include "models/flowtrain/allocator.h"

#include <algorithm>
#include <cmath>

namespace clustertwin::models::flowtrain {
namespace {

constexpr double kTpEfficiencyPerDoubling = 0.94;
constexpr double kStateBytesSharded = 6;     // bf16 weights and fp32 gradient accumulation (main grads), over TP x PP
constexpr double kStateBytesOptimizer = 12;  // fp32 master weights and two moments, over TP x PP x DP
// Activations kept per token, layer and hidden unit with selective recomputation (attention's scores recomputed)
// and sequence parallelism: 34 bytes, over TP (Korthikanti et al., "Reducing Activation Recomputation in Large
// Transformer Models", 2022).
constexpr double kKeptPerTokenLayer = 34;
// The encoder recomputes its forward in backward (so a sample in flight keeps only its layer inputs, bf16), with
// one layer's 34 bytes per token and hidden unit live while it runs.
constexpr double kEncoderKeptPerTokenLayer = 2;
constexpr double kEncoderLivePerToken = 34;

double state_bytes(double params, int tp, int pp, int dp) {
  return params * (kStateBytesSharded / (tp * pp) + kStateBytesOptimizer / (static_cast<double>(tp) * pp * dp));
}

}  // namespace

void set_dataset_means(AllocatorInputs* in, const DatasetOptions& options, int samples) {
  in->encoder_flops = in->backbone_flops = in->images = in->llm_tokens = 0;
  in->encoder_work = encoder_work(in->model, 0, in->device);
  in->backbone_work = backbone_work(in->model, 0, in->device);
  for (int i = 0; i < samples; ++i) {
    const Sample s = dataset_sample(options, i);
    const SampleCost c = sample_cost(in->model, s);
    in->encoder_flops += c.encoder_flops / samples;
    in->backbone_flops += c.backbone_flops / samples;
    in->images += static_cast<double>(s.images) / samples;
    in->llm_tokens += static_cast<double>(c.llm_tokens) / samples;
    in->encoder_work += scaled(encoder_work(in->model, s.images, in->device), 1.0 / samples);
    in->backbone_work += scaled(backbone_work(in->model, c.llm_tokens, in->device), 1.0 / samples);
  }
}

namespace {

// Micro-batches per replica and step, and samples per micro-batch.
double micro_batches(const AllocatorInputs& in, int dp) {
  return std::max(1.0, in.global_batch * in.llm_tokens / (static_cast<double>(in.micro_batch_tokens) * dp));
}
double samples_per_micro_batch(const AllocatorInputs& in) {
  return static_cast<double>(in.micro_batch_tokens) / in.llm_tokens;
}
double side_efficiency(const AllocatorInputs& in, double rate, double flops_per_sample, int devices) {
  return rate * flops_per_sample / (devices * in.device.peak_flops);
}

}  // namespace

SideLayout best_encoder_layout(const AllocatorInputs& in, int devices) {
  SideLayout best;
  best.devices = devices;
  const spec::VitSpec& v = in.model.encoder;
  const double params = static_cast<double>(v.params() + in.model.projector_params());
  for (int tp = 1; tp <= std::min(devices, in.devices_per_node); tp *= 2) {
    if (devices % tp != 0) continue;
    const int dp = devices / tp;
    const double tokens = static_cast<double>(in.micro_batch_images) * static_cast<double>(v.patches());
    const double memory = state_bytes(params, tp, 1, dp) +
                          tokens * static_cast<double>(v.hidden) *
                              (kEncoderKeptPerTokenLayer * static_cast<double>(v.layers) + kEncoderLivePerToken) / tp;
    if (memory > in.memory_bytes) continue;
    const double per_sample = kEncoderRecompute * stack_seconds(in.encoder_work, tp, in.device);
    const double rate = per_sample > 0 ? dp / per_sample : 0;
    if (rate > best.rate) {
      best = SideLayout{devices, tp, 1, dp, side_efficiency(in, rate, in.encoder_flops, devices), memory, rate};
    }
  }
  return best;
}

SideLayout best_backbone_layout(const AllocatorInputs& in, int devices) {
  SideLayout best;
  best.devices = devices;
  const spec::LlmSpec& m = in.model.backbone;
  const double params = static_cast<double>(m.params());
  const StackWork micro_batch = scaled(in.backbone_work, samples_per_micro_batch(in));
  for (int tp = 1; tp <= std::min(devices, in.devices_per_node); tp *= 2) {
    for (int pp = 1; tp * pp <= devices && pp <= m.layers; pp *= 2) {
      if (devices % (tp * pp) != 0) continue;
      const int dp = devices / (tp * pp);
      const double micro = micro_batches(in, dp);
      // 1F1B keeps PP micro-batches of layers/PP in flight on the first stage.
      const double in_flight = std::min(micro, static_cast<double>(pp));
      const double tokens = static_cast<double>(in.micro_batch_tokens);
      const double kept =
          in_flight * tokens * static_cast<double>(m.hidden) * kKeptPerTokenLayer * static_cast<double>(m.layers) / pp;
      const double memory = state_bytes(params, tp, pp, dp) + kept / tp;
      if (memory > in.memory_bytes) continue;
      const double stage = stack_seconds(stage_work(micro_batch, pp), tp, in.device);
      const double rate = dp * samples_per_micro_batch(in) / stage * micro / (micro + pp - 1);
      if (rate > best.rate) {
        best = SideLayout{devices, tp, pp, dp, side_efficiency(in, rate, in.backbone_flops, devices), memory, rate};
      }
    }
  }
  return best;
}

SideLayout best_monolithic_layout(const AllocatorInputs& in, int devices) {
  SideLayout best;
  best.devices = devices;
  const spec::LlmSpec& m = in.model.backbone;
  const spec::VitSpec& v = in.model.encoder;
  const double llm_params = static_cast<double>(m.params());
  const double enc_params = static_cast<double>(v.params() + in.model.projector_params());
  const double per_micro = samples_per_micro_batch(in);
  const StackWork micro_llm = scaled(in.backbone_work, per_micro);
  const StackWork micro_enc = scaled(in.encoder_work, per_micro);
  for (int tp = 1; tp <= std::min(devices, in.devices_per_node); tp *= 2) {
    for (int pp = 1; tp * pp <= devices && pp <= m.layers; pp *= 2) {
      if (devices % (tp * pp) != 0) continue;
      const int dp = devices / (tp * pp);
      const double micro = micro_batches(in, dp);
      const double in_flight = std::min(micro, static_cast<double>(pp));
      const double tokens = static_cast<double>(in.micro_batch_tokens);
      // The first stage: its share of the backbone plus the whole encoder, for the micro-batches in flight.
      const double enc_tokens = micro_enc.tokens;
      const double kept =
          in_flight *
          (tokens * static_cast<double>(m.hidden) * kKeptPerTokenLayer * static_cast<double>(m.layers) / pp +
           enc_tokens * static_cast<double>(v.hidden) * kEncoderKeptPerTokenLayer * static_cast<double>(v.layers));
      const double live = enc_tokens * static_cast<double>(v.hidden) * kEncoderLivePerToken;
      const double memory = state_bytes(llm_params / pp + enc_params, tp, 1, dp) + (kept + live) / tp;
      if (memory > in.memory_bytes) continue;
      const double stage = stack_seconds(stage_work(micro_llm, pp), tp, in.device);
      const double first = stage + kEncoderRecompute * stack_seconds(micro_enc, tp, in.device);
      const double step = micro * first + (pp - 1) * stage;
      const double rate = dp * micro * per_micro / step;
      if (rate > best.rate) {
        best =
            SideLayout{devices, tp,  pp, dp, side_efficiency(in, rate, in.encoder_flops + in.backbone_flops, devices),
                       memory,  rate};
      }
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
  if (!(in.device.peak_flops > 0) || !(in.device.memory_bandwidth > 0) || !(in.device.link_bandwidth > 0) ||
      !(in.memory_bytes > 0) || in.devices_per_node < 1) {
    return Status::invalid_argument(
        "allocator: the device's peak FLOP/s, memory and link bandwidths, memory and devices per node must be > 0");
  }
  if (!(in.encoder_flops > 0) || !(in.backbone_flops > 0) || !(in.llm_tokens > 0) || !(in.encoder_work.tokens > 0) ||
      !(in.backbone_work.tokens > 0) || in.global_batch < 1 || in.micro_batch_tokens < 1 || in.micro_batch_images < 1) {
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

}  // namespace clustertwin::models::flowtrain
