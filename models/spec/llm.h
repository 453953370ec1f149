#pragma once

// Decoder-only LLM specs at real sizes (Qwen2.5 family: GQA attention with
// QKV bias, SwiGLU MLP, RMSNorm, untied embeddings from 7B up) and what one
// token costs them: parameters, FLOPs, KV-cache and weight bytes. Plain
// arithmetic: the FlexMARL plans and twin size rollout and training from it.
//
// Per layer, with h = hidden, d = head_dim, kv = KV heads, f = MLP width:
//   attention  h*h + h (q) + 2 (h*kv*d + kv*d) (k, v) + h*h (o)
//   MLP        3 h f (gate, up, down)
//   norms      2 h

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::spec {

struct LlmSpec {
  std::string name;  // "14B"
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp = 0, vocab = 0;
  bool tied_embeddings = false;

  int64_t params() const;
  /// Parameters outside the embedding and output matrices.
  int64_t non_embedding_params() const;
  /// Forward FLOPs for one token at position `context` (attention reads the
  /// `context` tokens before it): 2 per weight it multiplies, plus 4 h
  /// context for the scores and the weighted sum.
  double forward_flops_per_token(int64_t context) const;
  /// Bytes of K and V one token adds to the cache.
  int64_t kv_bytes_per_token(int bytes_per_value) const;
  /// Training state per parameter with Adam in mixed precision: bf16 weights
  /// and gradients, fp32 master weights and two moments: 2 + 2 + 4 + 8 = 16.
  static constexpr int kTrainingBytesPerParam = 16;
};

/// The shipped sizes, by name: 0.5B, 1.5B, 7B, 14B, 32B, 72B (Qwen2.5's configs).
const std::vector<LlmSpec>& llm_specs();
/// NotFound naming the known sizes.
StatusOr<LlmSpec> llm_spec(const std::string& name);

}  // namespace clustertwin::spec
