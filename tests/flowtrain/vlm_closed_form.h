#pragma once

// The parameter counts of real/flowtrain/tiny_vlm.h's model in closed form, written from its layers for the
// tests to hold the library's counts (tiny_vlm_options.h) and a run's report against, independently of either.

#include <cstdint>

namespace clustertwin::real::flowtrain::closed_form {

/// A pre-norm block (TinyVlmBlockImpl) of width d and MLP f: LayerNorms 2 x 2d; qkv d x 3d + 3d; out d x d + d;
/// fc1 d x f + f; fc2 f x d + d. Together 4 d^2 + 2 d f + 9 d + f.
inline int64_t block(int64_t d, int64_t f) {
  return 4 * d * d + 2 * d * f + 9 * d + f;
}

/// The encoder side: patch Conv2d (C channels, p x p) C p^2 d + d; positions P d; `layers` blocks; LayerNorm 2 d;
/// projector d x d_model + d_model, d_model x d_model + d_model.
inline int64_t encoder(int64_t c, int64_t p, int64_t tokens, int64_t d, int64_t layers, int64_t f, int64_t d_model) {
  return c * p * p * d + d + tokens * d + layers * block(d, f) + 2 * d + d * d_model + d_model + d_model * d_model +
         d_model;
}

/// The backbone side: token embedding V d; positions context x d; `layers` blocks; final LayerNorm 2 d; head
/// d x V + V.
inline int64_t backbone(int64_t vocab, int64_t context, int64_t d, int64_t layers, int64_t f) {
  return vocab * d + context * d + layers * block(d, f) + 2 * d + d * vocab + vocab;
}

}  // namespace clustertwin::real::flowtrain::closed_form
