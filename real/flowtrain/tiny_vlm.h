#pragma once

// The vision-language model of FlowTrain's real executor (real/): the
// architecture of models/flowtrain/vlm.h (a ViT encoder, an MLP projector, a
// decoder-only backbone) at a size its options set (tiny_vlm_options.h: the
// tiny preset trains on two CPU cores, the large one fills a GPU), and a
// synthetic dataset with the image counts and text lengths of FlowTrain's.
//
//   images [n,C,H,W] ─► patch embedding (Conv p x p, stride p) + position ─► block x enc_layers (bidirectional)
//                    ─► LayerNorm ─► projector (Linear d_vision->d_model, GELU, Linear d_model->d_model)
//                    ─► image tokens [n, P, d_model]                                  P = (H/p) * (W/p)
//
//   [image tokens of image 0 .. k-1, token embedding(text)] + position ─► block x layers (causal)
//                    ─► LayerNorm ─► head ─► logits [k*P + T, vocab]
//
// The executor runs the two sides in different processes: the encoder side
// calls `encode` and sends the image tokens, the backbone side calls
// `sample_loss` on a detached copy that requires grad, runs backward and
// sends the copy's gradient back, and the encoder side finishes with
// `tokens.backward(gradient)`. The parameter gradients are those of one
// backward through the whole model (tiny_vlm_test checks this).
//
// Initialisation comes from an explicit CPU generator seeded by the caller
// (GPT-2's: normal(0, 0.02) weights, embeddings and positions, zero biases,
// unit norms), so the same seed gives bitwise-identical parameters whatever
// else ran in the process.
//
// Precision: the parameters' dtype (float32 as made; `model->to(torch::kBFloat16)`
// for bfloat16) is the compute dtype, and the sides meet in float32: `encode`
// takes float images and returns float32 image tokens, `sample_loss` takes
// float32 image tokens and returns a float32 loss. The casts sit inside the
// graph, so the image tokens' gradient (what the backbone side sends back)
// is float32 too, and the memory pool between the sides never sees bfloat16.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "real/flowtrain/tiny_vlm_options.h"

namespace clustertwin::real::flowtrain {

/// A pre-norm transformer block, causal or bidirectional:
///   x += out(attention(qkv(LN1 x)))     `heads` heads; position t sees positions <= t when causal, all otherwise
///   x += fc2(GELU(fc1(LN2 x)))
class TinyVlmBlockImpl : public torch::nn::Module {
 public:
  TinyVlmBlockImpl(int64_t d, int64_t heads, int64_t d_ff, bool causal);

  /// x [B, T, d] -> [B, T, d].
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t heads_;
  bool causal_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, out_{nullptr}, fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(TinyVlmBlock);

/// The encoder side: patch embedding, ViT blocks, their norm, the projector.
class TinyVlmEncoderImpl : public torch::nn::Module {
 public:
  explicit TinyVlmEncoderImpl(const TinyVlmOptions& options);

  /// images [n, C, H, W] float (n >= 1) -> image tokens [n, P, d_model] float32, computed in the parameters' dtype.
  torch::Tensor forward(const torch::Tensor& images);

 private:
  TinyVlmOptions options_;
  torch::nn::Conv2d patch_{nullptr};
  torch::Tensor position_;  // [P, d_vision]
  std::vector<TinyVlmBlock> blocks_;
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear project1_{nullptr}, project2_{nullptr};
};
TORCH_MODULE(TinyVlmEncoder);

/// The backbone side: token and position embeddings, causal blocks, the final norm, the head.
class TinyVlmBackboneImpl : public torch::nn::Module {
 public:
  explicit TinyVlmBackboneImpl(const TinyVlmOptions& options);

  /// One sample's next-token loss summed over its predicted text tokens; see TinyVlmImpl::sample_loss.
  torch::Tensor sample_loss(const torch::Tensor& image_tokens, const torch::Tensor& text);

 private:
  TinyVlmOptions options_;
  torch::nn::Embedding token_{nullptr}, position_{nullptr};
  std::vector<TinyVlmBlock> blocks_;
  torch::nn::LayerNorm final_norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(TinyVlmBackbone);

/// The whole model: an encoder side and a backbone side, each parameter in exactly one.
class TinyVlmImpl : public torch::nn::Module {
 public:
  explicit TinyVlmImpl(const TinyVlmOptions& options);

  /// images [n, C, H, W] (n >= 1) -> projected image tokens [n, P, d_model] float32. Encoder and projector.
  torch::Tensor encode(const torch::Tensor& images);

  /// One sample's next-token cross-entropy (a 0-dim float32 tensor), summed, not averaged, over its predicted tokens so
  /// that the losses of many samples add up. `image_tokens`: the sample's projected image tokens [k, P, d_model],
  /// k >= 0 (k = 0: an undefined tensor or [0, P, d_model]); `text`: int64 [T], T >= 2, k*P + T <= context.
  /// Text token t+1 is predicted from text token t's position, and with images the first text token from the
  /// last image token's: T predictions with images, T - 1 without.
  torch::Tensor sample_loss(const torch::Tensor& image_tokens, const torch::Tensor& text);

  /// Each side's parameters, for the executor's separate optimisers and all-reduces; together they are
  /// parameters(), each parameter in one list only.
  std::vector<torch::Tensor> encoder_parameters() const { return encoder_->parameters(); }
  std::vector<torch::Tensor> backbone_parameters() const { return backbone_->parameters(); }

  const TinyVlmOptions& options() const { return options_; }

 private:
  TinyVlmOptions options_;
  TinyVlmEncoder encoder_{nullptr};
  TinyVlmBackbone backbone_{nullptr};
};
TORCH_MODULE(TinyVlm);

/// A model with `options` (checked first) and parameters seeded by `seed`.
StatusOr<TinyVlm> make_tiny_vlm(const TinyVlmOptions& options, uint64_t seed);

/// One synthetic training sample.
struct TinyVlmSample {
  int64_t id = 0;
  torch::Tensor images;  // float [k, C, H, W], k in 0..max_images
  torch::Tensor text;    // int64 [T], values in [0, vocab)
};

/// Sample `id` of the synthetic dataset with seed `seed`; the same (options, seed, id) gives bitwise-identical
/// tensors in any process.
///
/// Sizes follow models/flowtrain/vlm.h's dataset_sample with the same seed: k = min(its images, max_images);
/// T = clamp(round(its text_tokens * options.text_scale), 2, context - k*P).
///
/// Content, drawn from a CPU generator seeded by (seed, id): image i has a brightness b_i ~ U[0, 1) and pixels
/// b_i + 0.1 N(0, 1). The text counts up with a stride s = 1 + floor(4 * mean_i b_i) (s = 1 without images):
/// t_0 is uniform, then t_{j+1} = (t_j + s) mod vocab with probability 0.9, else a uniform token. So a model
/// learns the rule from the text and the stride, from the first token on, from the images' brightness.
TinyVlmSample tiny_vlm_sample(const TinyVlmOptions& options, uint64_t seed, int64_t id);

}  // namespace clustertwin::real::flowtrain
