#include "real/igsp/self_generation.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "real/igsp/model_pruner.h"

namespace clustertwin::real::igsp {
namespace {

Status check(const models::nets::ByteLm& model, const SelfGenOptions& o) {
  if (o.samples < 1) return Status::invalid_argument("samples " + std::to_string(o.samples) + ": must be >= 1");
  if (o.length < 2 || o.length > model->options().context) {
    return Status::invalid_argument("sample length " + std::to_string(o.length) + ": must be in [2, context " +
                                    std::to_string(model->options().context) + "]");
  }
  if (!(o.t_start >= 0) || !(o.t_end >= 0) || o.ramp < 0)
    return Status::invalid_argument("self-generation: temperatures must be >= 0 and the ramp >= 0");
  return Status::ok();
}

// Continues every row of `start` ([B, k] int64) to `length` bytes; temperature(t) for position t; 0 is greedy.
at::Tensor continue_rows(models::nets::ByteLm& model, at::Tensor start, int64_t length,
                         const std::function<double(int64_t)>& temperature, at::Generator& generator) {
  at::NoGradGuard no_grad;
  model->eval();
  // Incremental decoding: each new byte costs one position, not the whole prefix again.
  models::nets::ByteLmImpl::DecodeState state;
  std::vector<at::Tensor> parts = {start};
  at::Tensor logits = model->decode(start, state).select(1, start.size(1) - 1);  // [B, vocab]
  for (int64_t position = start.size(1); position < length; ++position) {
    const double t = temperature(position);
    at::Tensor next;
    if (t <= 0) {
      next = logits.argmax(-1, true);
    } else {
      next = at::multinomial(at::softmax(logits / t, -1), 1, false, generator);
    }
    parts.push_back(next);
    if (position + 1 < length) logits = model->decode(next, state).select(1, 0);
  }
  return at::cat(parts, 1);
}

}  // namespace

StatusOr<at::Tensor> self_cal(models::nets::ByteLm& model, const SelfGenOptions& o) {
  CT_RETURN_IF_ERROR(check(model, o));
  at::Generator generator = at::detail::createCPUGenerator(o.seed);
  const at::Tensor start = at::full({o.samples, 1}, static_cast<int64_t>('\n'), at::TensorOptions().dtype(at::kLong));
  auto temperature = [&o](int64_t position) {
    if (o.ramp == 0 || position >= o.ramp) return o.t_end;
    return o.t_start + (o.t_end - o.t_start) * static_cast<double>(position) / static_cast<double>(o.ramp);
  };
  return continue_rows(model, start, o.length, temperature, generator);
}

StatusOr<at::Tensor> sgs(models::nets::ByteLm& model, const std::vector<const std::string*>& sources,
                         const SelfGenOptions& o, int64_t prefix, int candidates_per_sample) {
  CT_RETURN_IF_ERROR(check(model, o));
  if (sources.empty()) return Status::invalid_argument("sgs: an empty calibration source list");
  if (prefix < 1 || prefix >= o.length)
    return Status::invalid_argument("sgs: prefix " + std::to_string(prefix) + " must be in [1, length)");
  if (candidates_per_sample < 1) return Status::invalid_argument("sgs: candidates per sample must be >= 1");
  for (const std::string* s : sources) {
    if (s->size() < static_cast<size_t>(prefix))
      return Status::invalid_argument("sgs: an empty calibration source (shorter than a prefix)");
  }
  at::Generator generator = at::detail::createCPUGenerator(o.seed);
  const int64_t n = o.samples * candidates_per_sample;
  at::Tensor starts = at::empty({n, prefix}, at::TensorOptions().dtype(at::kLong));
  std::mt19937_64 engine(o.seed + 0x5367);
  for (int64_t i = 0; i < n; ++i) {
    const std::string& text = *sources[engine() % sources.size()];
    const uint64_t offset = engine() % (text.size() - static_cast<uint64_t>(prefix) + 1);
    for (int64_t t = 0; t < prefix; ++t)
      starts[i][t] = static_cast<unsigned char>(text[offset + static_cast<uint64_t>(t)]);
  }
  const at::Tensor candidates = continue_rows(
      model, starts, o.length, [&o](int64_t) { return o.t_end; }, generator);
  // Keep the lowest-perplexity candidates (the SGS filter), in their original order.
  const std::vector<double> ppl = sample_perplexities(model, candidates);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ppl[a] < ppl[b]; });
  order.resize(static_cast<size_t>(o.samples));
  std::sort(order.begin(), order.end());
  return candidates.index_select(0, at::tensor(order, at::TensorOptions().dtype(at::kLong)));
}

}  // namespace clustertwin::real::igsp
