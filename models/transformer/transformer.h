#pragma once

// A dense decoder-only transformer (GPT, Llama) as the twins describe it:
// its shape, its parameters and the FLOPs of a training step. Plain C++.
//
// Parameters (biases and norms counted as GPT-3 has them; learned positions):
//
//   per layer   h (h + 2 kv d) + h h          QKV (kv heads of d = h / heads) and output projections
//               + m h f                        MLP: m = 2 matrices, 3 when gated (SwiGLU)
//               + (h + 2 kv d) + h + (m - 1) f + h  biases
//               + 4 h                          two LayerNorms (scale, shift)
//   embedding   V h + s h                      tokens (tied with the LM head) and positions
//   final norm  2 h
//
// which for GPT (kv = heads, f = 4h, m = 2) is Narayanan et al. 2021's
// 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h)) plus the final norm.
//
// Model FLOPs of a training step (forward + backward = 3 forwards; the
// convention of Narayanan et al. 2021, eq. 3, for MFU: attention scores over
// the full s x s, causal or not):
//
//   forward per token   l (2 W_layer + 4 s h) + 2 h V      W_layer: the layer's weight count
//   per step            3 x tokens x forward per token
//
// which for GPT is 72 B s l h^2 (1 + s / (6 h) + V / (12 l h)).

#include <cstdint>

#include "models/spec/llm.h"
#include "models/spec/vit.h"

namespace clustertwin::models::transformer {

/// Bytes one layer keeps for its backward per token and hidden unit (bf16, nothing recomputed, attention fused so
/// no scores kept, TP 1): Korthikanti et al. 2022, Table 2, 34 s b h.
inline constexpr double kActivationBytesPerTokenAndHidden = 34;

struct Transformer {
  int64_t hidden = 0;    // h
  int64_t heads = 0;     // attention heads
  int64_t kv_heads = 0;  // key/value heads (grouped-query attention); 0: heads
  int64_t ffn = 0;       // MLP width f; 0: 4 h
  int64_t layers = 0;    // l
  int64_t seq = 0;       // s, tokens per sequence
  int64_t vocab = 51200;
  bool gated_mlp = false;  // SwiGLU: gate, up and down matrices
};

/// kv_heads, or heads when 0.
int64_t kv_heads_of(const Transformer& t);
/// ffn, or 4 h when 0.
int64_t ffn_of(const Transformer& t);
/// h / heads.
int64_t head_dim(const Transformer& t);

/// Weights of one layer's matrices (no biases or norms).
int64_t layer_weights(const Transformer& t);
/// Parameters of one layer: weights, biases and norms.
int64_t layer_parameters(const Transformer& t);
/// The token and position embeddings (the LM head shares the token embedding).
int64_t embedding_parameters(const Transformer& t);
/// All parameters.
int64_t parameter_count(const Transformer& t);

/// Forward FLOPs of one layer for one token (its GEMMs, and the attention
/// scores and values over the full sequence).
double layer_forward_flops_per_token(const Transformer& t);
/// Of those, the attention scores and values: 4 s h.
double attention_forward_flops_per_token(const Transformer& t);
/// Forward FLOPs of the LM head for one token: 2 h V.
double head_forward_flops_per_token(const Transformer& t);
/// Model FLOPs of a training step over `sequences` sequences (no recomputation counted).
double model_flops_per_step(const Transformer& t, int64_t sequences);

/// A shipped LLM (Qwen2.5's shapes: grouped-query attention, SwiGLU MLP, its
/// LM head) as a transformer; seq 0 (each caller's sequences set it).
Transformer from_llm_spec(const spec::LlmSpec& llm);
/// A vision encoder (InternViT: multi-head attention, GELU MLP) as a
/// transformer over an image's patches, with no LM head (vocab 0: a
/// projector follows).
Transformer from_vit_spec(const spec::VitSpec& vit);

}  // namespace clustertwin::models::transformer
