#include "models/transformer/transformer.h"

namespace clustertwin::models::transformer {

int64_t kv_heads_of(const Transformer& t) {
  return t.kv_heads > 0 ? t.kv_heads : t.heads;
}

int64_t ffn_of(const Transformer& t) {
  return t.ffn > 0 ? t.ffn : 4 * t.hidden;
}

int64_t head_dim(const Transformer& t) {
  return t.hidden / t.heads;
}

namespace {

// Matrices of the MLP: 3 when gated, else 2.
int64_t mlp_matrices(const Transformer& t) {
  return t.gated_mlp ? 3 : 2;
}

// Width of the fused QKV projection's output: h queries plus keys and values of the kv heads.
int64_t qkv_width(const Transformer& t) {
  return t.hidden + 2 * kv_heads_of(t) * head_dim(t);
}

}  // namespace

int64_t layer_weights(const Transformer& t) {
  return t.hidden * qkv_width(t) + t.hidden * t.hidden + mlp_matrices(t) * t.hidden * ffn_of(t);
}

int64_t layer_parameters(const Transformer& t) {
  const int64_t biases = qkv_width(t) + t.hidden + (mlp_matrices(t) - 1) * ffn_of(t) + t.hidden;
  return layer_weights(t) + biases + 4 * t.hidden;
}

int64_t embedding_parameters(const Transformer& t) {
  return (t.vocab + t.seq) * t.hidden;
}

int64_t parameter_count(const Transformer& t) {
  return t.layers * layer_parameters(t) + embedding_parameters(t) + 2 * t.hidden;
}

double attention_forward_flops_per_token(const Transformer& t) {
  return 4.0 * static_cast<double>(t.seq) * static_cast<double>(t.hidden);
}

double layer_forward_flops_per_token(const Transformer& t) {
  return 2.0 * static_cast<double>(layer_weights(t)) + attention_forward_flops_per_token(t);
}

double head_forward_flops_per_token(const Transformer& t) {
  return 2.0 * static_cast<double>(t.hidden) * static_cast<double>(t.vocab);
}

double model_flops_per_step(const Transformer& t, int64_t sequences) {
  const double tokens = static_cast<double>(sequences) * static_cast<double>(t.seq);
  const double forward =
      static_cast<double>(t.layers) * layer_forward_flops_per_token(t) + head_forward_flops_per_token(t);
  return 3.0 * tokens * forward;
}

Transformer from_llm_spec(const spec::LlmSpec& m) {
  Transformer t;
  t.hidden = m.hidden;
  t.heads = m.heads;
  t.kv_heads = m.kv_heads;
  t.ffn = m.mlp;
  t.layers = m.layers;
  t.vocab = m.vocab;
  t.gated_mlp = true;
  return t;
}

Transformer from_vit_spec(const spec::VitSpec& v) {
  Transformer t;
  t.hidden = v.hidden;
  t.heads = v.heads;
  t.ffn = v.mlp;
  t.layers = v.layers;
  t.seq = v.patches();
  t.vocab = 0;
  return t;
}

}  // namespace clustertwin::models::transformer
