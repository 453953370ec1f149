#pragma once

// What the libtorch models share to build and initialise themselves. Only
// torch code includes this header.

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace clustertwin::models::nets {

inline torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out));
}

inline torch::nn::LayerNorm layer_norm(int64_t d) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}));
}

/// GPT-2's initialisation from an explicit CPU generator seeded by `seed`:
/// LayerNorms' weights 1 and biases 0, every other bias 0, every other
/// weight (Linears, embeddings, positions, convolutions) normal(0, 0.02),
/// drawn in the order of model.modules(). Decided by the kind of module
/// that owns a parameter, not by its name. Aborts (TORCH_CHECK, naming
/// `model_name`) if some parameter is left out.
void init_gpt2(torch::nn::Module& model, uint64_t seed, const std::string& model_name);

}  // namespace clustertwin::models::nets
