#include "models/flowtrain/tiny_plan.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "models/flowtrain/dispatch.h"
#include "models/flowtrain/packing.h"

namespace clustertwin::models::flowtrain {

TinySample tiny_sample(const TinyFacts& f, uint64_t seed, int64_t id) {
  DatasetOptions dataset;
  dataset.seed = seed;
  const Sample sizes = dataset_sample(dataset, id);
  TinySample s;
  s.id = id;
  s.images = static_cast<int>(std::min<int64_t>(sizes.images, f.max_images));
  const double longest = static_cast<double>(f.context - s.images * f.tokens_per_image);
  s.text =
      static_cast<int64_t>(std::clamp(std::round(static_cast<double>(sizes.text_tokens) * f.text_scale), 2.0, longest));
  s.tokens = s.images * f.tokens_per_image + s.text;
  const double n = static_cast<double>(f.tokens_per_image), t = static_cast<double>(s.tokens);
  s.encoder_flops =
      s.images * (6 * f.encoder_params * n + 12.0 * static_cast<double>(f.d_vision * f.enc_layers) * n * n);
  s.backbone_flops = 6 * f.backbone_params * t + 6.0 * static_cast<double>(f.d_model * f.layers) * t * t;
  return s;
}

int64_t tiny_sample_bytes(const TinyFacts& facts, const TinySample& s) {
  return 4 * s.images * 3 * facts.tokens_per_image * facts.patch * facts.patch + 8 * s.text;
}

std::vector<TinySample> tiny_step(const TinyFacts& facts, uint64_t seed, int step, int batch) {
  std::vector<TinySample> out;
  for (int i = 0; i < batch; ++i)
    out.push_back(tiny_sample(facts, seed, static_cast<int64_t>(step) * batch + i));
  return out;
}

StatusOr<StepPlan> plan_step(const std::vector<TinySample>& samples, int encoders, int backbones, int64_t capacity,
                             bool by_cost) {
  if (encoders < 1 || backbones < 1) {
    return Status::invalid_argument("plan_step: " + std::to_string(encoders) + " encoder and " +
                                    std::to_string(backbones) + " backbone workers (each side needs one at least)");
  }
  std::vector<PackItem> items;
  int64_t tokens = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    items.push_back({static_cast<int64_t>(i), samples[i].tokens, samples[i].backbone_flops});
    tokens += samples[i].tokens;
  }
  int bins = static_cast<int>(std::max<int64_t>(1, (tokens + capacity - 1) / capacity));
  bins = (bins + backbones - 1) / backbones * backbones;
  std::optional<Packing> packing;
  for (int tries = 0; tries < 64 && !packing; ++tries, bins += backbones) {
    auto p = by_cost ? pack_by_cost(items, bins, capacity) : pack_by_tokens(items, bins, capacity);
    if (p.is_ok()) packing = std::move(*p);
  }
  if (!packing) {
    return Status::invalid_argument("plan_step: no packing of " + std::to_string(samples.size()) +
                                    " samples into micro-batches of " + std::to_string(capacity) + " tokens");
  }
  StepPlan plan;
  plan.bins = packing->bins;
  if (by_cost) {
    auto images = [&](const std::vector<int64_t>& bin) {
      int n = 0;
      for (int64_t i : bin)
        n += samples[i].images;
      return n;
    };
    std::stable_sort(plan.bins.begin(), plan.bins.end(),
                     [&](const auto& a, const auto& b) { return images(a) > images(b); });
  }
  plan.backbone_of.assign(samples.size(), -1);
  plan.encoder_of.assign(samples.size(), -1);
  // The micro-batches each backbone replica trains: round-robin (models/flowtrain/dispatch.h).
  MicroBatchDispatch dispatch(MicroBatchDispatch::Policy::kRoundRobin, static_cast<int>(plan.bins.size()), backbones);
  for (int k = 0; k < backbones; ++k) {
    for (int j; (j = dispatch.take(k, [](int) { return true; })) != MicroBatchDispatch::kDone;) {
      for (int64_t i : plan.bins[static_cast<size_t>(j)])
        plan.backbone_of[i] = encoders + k;
    }
  }
  for (size_t j = 0; j < plan.bins.size(); ++j) {
    for (int64_t i : plan.bins[j]) {
      if (samples[i].images > 0) plan.order.push_back(static_cast<int>(i));
    }
  }
  // The image samples, in micro-batch order, to the encoders: round-robin (models/flowtrain/dispatch.h).
  EncoderDispatch encode(EncoderDispatch::Policy::kRoundRobin, plan.order, encoders);
  for (int e = 0; e < encoders; ++e) {
    for (int i; (i = encode.take(e)) != EncoderDispatch::kNone;)
      plan.encoder_of[static_cast<size_t>(i)] = e;
  }
  return plan;
}

}  // namespace clustertwin::models::flowtrain
