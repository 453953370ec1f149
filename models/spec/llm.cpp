#include "models/spec/llm.h"

namespace clustertwin::spec {

int64_t LlmSpec::non_embedding_params() const {
  const int64_t kv_width = kv_heads * head_dim;
  const int64_t attention = hidden * hidden + hidden + 2 * (hidden * kv_width + kv_width) + hidden * hidden;
  const int64_t mlp_params = 3 * hidden * mlp;
  const int64_t norms = 2 * hidden;
  return layers * (attention + mlp_params + norms) + hidden;  // + the final norm
}

int64_t LlmSpec::params() const {
  return non_embedding_params() + vocab * hidden * (tied_embeddings ? 1 : 2);
}

double LlmSpec::forward_flops_per_token(int64_t context) const {
  // Every weight but the input embedding (a lookup) is multiplied once: 2 FLOPs each.
  const double matmul_params = static_cast<double>(non_embedding_params() + vocab * hidden);
  const double attention = 4.0 * static_cast<double>(layers * heads * head_dim) * static_cast<double>(context);
  return 2 * matmul_params + attention;
}

int64_t LlmSpec::kv_bytes_per_token(int bytes_per_value) const {
  return 2 * layers * kv_heads * head_dim * bytes_per_value;
}

const std::vector<LlmSpec>& llm_specs() {
  // Qwen2.5's published configs (config.json of each checkpoint): layers, hidden, heads, KV heads, head dim, MLP
  // width, vocabulary, tied embeddings. The small sizes tie input and output embeddings; from 7B on they do not.
  static const std::vector<LlmSpec> specs = {
      {"0.5B", 24, 896, 14, 2, 64, 4864, 151936, true},    {"1.5B", 28, 1536, 12, 2, 128, 8960, 151936, true},
      {"7B", 28, 3584, 28, 4, 128, 18944, 152064, false},  {"14B", 48, 5120, 40, 8, 128, 13824, 152064, false},
      {"32B", 64, 5120, 40, 8, 128, 27648, 152064, false}, {"72B", 80, 8192, 64, 8, 128, 29568, 152064, false},
  };
  return specs;
}

StatusOr<LlmSpec> llm_spec(const std::string& name) {
  std::string known;
  for (const LlmSpec& s : llm_specs()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  return Status::not_found("unknown model size '" + name + "' (known: " + known + ")");
}

}  // namespace clustertwin::spec
