#pragma once

// Calibration text the model writes itself:
//   Self-Cal (Williams et al., NAACL 2025): from no context (here: a newline),
//     sampling with a temperature rising linearly from t_start to t_end over
//     the first `ramp` bytes, then t_end.
//   SGS (Ji et al., "Beware of calibration data for pruning LLMs"): from
//     prefixes of source text, continued by sampling, keeping the candidates
//     of lowest perplexity under the model.
// Sampling draws from an explicit CPU generator, so a seed gives the same text.

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "models/torch/byte_lm.h"

namespace clustertwin::real::igsp {

struct SelfGenOptions {
  int64_t samples = 128;
  int64_t length = 128;  // bytes per sample (at most the model's context)
  double t_start = 0.6, t_end = 1.2;
  int64_t ramp = 64;
  uint64_t seed = 0;
};

/// Self-Cal: `samples` texts of `length` bytes, as [samples, length] int64.
StatusOr<at::Tensor> self_cal(models::nets::ByteLm& model, const SelfGenOptions& options);

/// SGS: `candidates_per_sample` continuations per kept sample, each from a
/// prefix of `prefix` bytes drawn from `sources` (concatenated text), sampled
/// at t_end; the `samples` of lowest perplexity under the model are kept.
StatusOr<at::Tensor> sgs(models::nets::ByteLm& model, const std::vector<const std::string*>& sources,
                         const SelfGenOptions& options, int64_t prefix = 16, int candidates_per_sample = 2);

}  // namespace clustertwin::real::igsp
