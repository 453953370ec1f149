#pragma once

// FlexMARL's rollout engine, one inference instance's work: batched sampling
// from a small GPT policy with a KV cache.
//
//   requests ──group by prompt length──► prefill [B, P] ──► decode one token a step ──► responses
//                                          (KV cache)         every row until its budget or kEnd
//
// Rows of a batch share one cache length, so a batch holds prompts of one
// length (ByteLm has no padding mask); a row that stopped keeps decoding
// padding until the batch's last row stops, as a static batch does, and
// that waste is part of what the instance's time measures.
//
// Each request samples from its own generator, seeded by its key and the
// run's seed, so a response does not depend on which instance produced it
// or which requests shared its batch (up to the last bits of the logits,
// which batching may change). Alongside the tokens come what the trainer
// needs from the behaviour policy: the log-probability of every next token
// and, for SIS, the K most likely next tokens with their log-probabilities.
//
// The engine runs where the model's parameters are: prefill, decode and the
// KV cache on the GPU when the model is there. The tokens are drawn on the
// host, from each position's probabilities copied back ([B, V], a few
// hundred bytes), with the requests' CPU generators: a seed draws the same
// uniforms on every device, so the CPU's responses are what they always
// were and a GPU's differ only where its logits' last bits tip a draw. The
// host needs each token anyway, to stop the rows. Results are in host memory.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "models/torch/byte_lm.h"

namespace clustertwin::real::flexmarl {

struct RolloutRequest {
  uint64_t key = 0;             // the sample's identity: its generator's seed
  std::vector<int64_t> prompt;  // at least one token
  int budget = 1;               // new tokens at most
  bool stops_at_end = true;     // stop after emitting `end_token`
};

struct RolloutResult {
  std::vector<int64_t> response;
  at::Tensor logp;       // [P + R - 1]: log-probability of token t + 1 given tokens <= t, prompt and response
  at::Tensor topk_ids;   // [P + R - 1, K] int64
  at::Tensor topk_logp;  // [P + R - 1, K]
};

struct RolloutOptions {
  int topk = 4;
  int64_t end_token = 0;
  uint64_t seed = 0;
};

/// Samples every request's response from `model`. InvalidArgument naming the
/// request for an empty prompt, a token outside the vocabulary, a budget
/// below 1, or a prompt plus budget past the context; for K outside
/// [1, vocab].
StatusOr<std::vector<RolloutResult>> generate(models::nets::ByteLm& model, const std::vector<RolloutRequest>& requests,
                                              const RolloutOptions& options);

}  // namespace clustertwin::real::flexmarl
