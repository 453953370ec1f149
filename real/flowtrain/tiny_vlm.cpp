#include "real/flowtrain/tiny_vlm.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "common/hash.h"
#include "models/flowtrain/tiny_plan.h"
#include "models/flowtrain/vlm.h"
#include "models/torch/init.h"

namespace clustertwin::real::flowtrain {
namespace {

using models::nets::init_gpt2;
using models::nets::layer_norm;
using models::nets::linear;

std::string str(int64_t v) {
  return std::to_string(v);
}

}  // namespace

TinyVlmBlockImpl::TinyVlmBlockImpl(int64_t d, int64_t heads, int64_t d_ff, bool causal)
    : heads_(heads), causal_(causal) {
  ln1_ = register_module("ln1", layer_norm(d));
  qkv_ = register_module("qkv", linear(d, 3 * d));
  out_ = register_module("out", linear(d, d));
  ln2_ = register_module("ln2", layer_norm(d));
  fc1_ = register_module("fc1", linear(d, d_ff));
  fc2_ = register_module("fc2", linear(d_ff, d));
}

torch::Tensor TinyVlmBlockImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2), dh = d / heads_;
  // [B, T, 3d] -> three [B, H, T, dh]
  const std::vector<torch::Tensor> qkv =
      qkv_->forward(ln1_->forward(x)).view({b, t, 3, heads_, dh}).permute({2, 0, 3, 1, 4}).unbind(0);
  torch::Tensor scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(dh));
  if (causal_) {
    const torch::Tensor future =
        torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  const torch::Tensor attended = torch::matmul(torch::softmax(scores, -1), qkv[2]).transpose(1, 2).reshape({b, t, d});
  const torch::Tensor y = x + out_->forward(attended);
  return y + fc2_->forward(torch::gelu(fc1_->forward(ln2_->forward(y))));
}

TinyVlmEncoderImpl::TinyVlmEncoderImpl(const TinyVlmOptions& o) : options_(o) {
  patch_ = register_module(
      "patch", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.channels, o.d_vision, o.patch).stride(o.patch)));
  position_ = register_parameter("position", torch::empty({o.tokens_per_image(), o.d_vision}));
  for (int64_t i = 0; i < o.enc_layers; ++i) {
    blocks_.push_back(register_module("block" + str(i), TinyVlmBlock(o.d_vision, o.enc_heads, o.d_vision_ff,
                                                                     /*causal=*/false)));
  }
  norm_ = register_module("norm", layer_norm(o.d_vision));
  project1_ = register_module("project1", linear(o.d_vision, o.d_model));
  project2_ = register_module("project2", linear(o.d_model, o.d_model));
}

torch::Tensor TinyVlmEncoderImpl::forward(const torch::Tensor& images) {
  const TinyVlmOptions& o = options_;
  TORCH_CHECK(images.dim() == 4 && images.size(0) >= 1 && images.size(1) == o.channels &&
                  images.size(2) == o.image_size && images.size(3) == o.image_size,
              "TinyVlm::encode: images of shape ", images.sizes(), ", expected [n >= 1, ", o.channels, ", ",
              o.image_size, ", ", o.image_size, "]");
  // [n, d_vision, H/p, W/p] -> [n, P, d_vision], patches in row-major order; in the parameters' dtype.
  torch::Tensor x = patch_->forward(images.to(position_.scalar_type())).flatten(2).transpose(1, 2) + position_;
  for (TinyVlmBlock& block : blocks_)
    x = block->forward(x);
  // The side's boundary is float32 (a no-op for a float32 model); the cast is in the graph, so is its gradient.
  return project2_->forward(torch::gelu(project1_->forward(norm_->forward(x)))).to(torch::kFloat);
}

TinyVlmBackboneImpl::TinyVlmBackboneImpl(const TinyVlmOptions& o) : options_(o) {
  token_ = register_module("token", torch::nn::Embedding(o.vocab, o.d_model));
  position_ = register_module("position", torch::nn::Embedding(o.context, o.d_model));
  for (int64_t i = 0; i < o.layers; ++i)
    blocks_.push_back(register_module("block" + str(i), TinyVlmBlock(o.d_model, o.heads, o.d_ff, /*causal=*/true)));
  final_norm_ = register_module("final_norm", layer_norm(o.d_model));
  head_ = register_module("head", linear(o.d_model, o.vocab));
}

torch::Tensor TinyVlmBackboneImpl::sample_loss(const torch::Tensor& image_tokens, const torch::Tensor& text) {
  const TinyVlmOptions& o = options_;
  const int64_t p = o.tokens_per_image();
  const bool has_images = image_tokens.defined() && image_tokens.numel() > 0;
  const int64_t k = has_images ? image_tokens.size(0) : 0;
  if (image_tokens.defined()) {
    TORCH_CHECK(image_tokens.dim() == 3 && image_tokens.size(1) == p && image_tokens.size(2) == o.d_model,
                "TinyVlm::sample_loss: image tokens of shape ", image_tokens.sizes(), ", expected [k, ", p, ", ",
                o.d_model, "]");
  }
  TORCH_CHECK(text.dim() == 1 && text.size(0) >= 2 && text.scalar_type() == torch::kLong,
              "TinyVlm::sample_loss: text of shape ", text.sizes(), " and type ", text.scalar_type(),
              ", expected int64 [T >= 2]");
  const int64_t t = text.size(0), length = k * p + t;
  TORCH_CHECK(length <= o.context, "TinyVlm::sample_loss: ", k, " images x ", p, " tokens + ", t,
              " text tokens = ", length, " exceed the context of ", o.context);

  torch::Tensor x = token_->forward(text);
  // Float32 image tokens into the parameters' dtype, inside the graph: their gradient goes back float32.
  if (has_images) x = torch::cat({image_tokens.reshape({k * p, o.d_model}).to(x.scalar_type()), x}, 0);
  x = (x + position_->forward(torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(text.device()))))
          .unsqueeze(0);
  for (TinyVlmBlock& block : blocks_)
    x = block->forward(x);
  // Position j predicts position j + 1's token, for every text token but a first one with nothing before it.
  const int64_t first = has_images ? k * p - 1 : 0;
  // The loss in float32 whatever the compute dtype (a no-op for a float32 model).
  const torch::Tensor logits = head_->forward(final_norm_->forward(x[0].slice(0, first, length - 1))).to(torch::kFloat);
  const torch::Tensor targets = text.slice(0, has_images ? 0 : 1, t);
  return torch::nn::functional::cross_entropy(logits, targets,
                                              torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

TinyVlmImpl::TinyVlmImpl(const TinyVlmOptions& options) : options_(options) {
  const Status checked = check_tiny_vlm_options(options_);
  TORCH_CHECK(checked.is_ok(), "TinyVlm: ", checked.message());
  encoder_ = register_module("encoder", TinyVlmEncoder(options_));
  backbone_ = register_module("backbone", TinyVlmBackbone(options_));
}

torch::Tensor TinyVlmImpl::encode(const torch::Tensor& images) {
  return encoder_->forward(images);
}

torch::Tensor TinyVlmImpl::sample_loss(const torch::Tensor& image_tokens, const torch::Tensor& text) {
  return backbone_->sample_loss(image_tokens, text);
}

StatusOr<TinyVlm> make_tiny_vlm(const TinyVlmOptions& options, uint64_t seed) {
  CT_RETURN_IF_ERROR(check_tiny_vlm_options(options));
  TinyVlm model(options);
  init_gpt2(*model, seed, "TinyVlm");
  return model;
}

TinyVlmSample tiny_vlm_sample(const TinyVlmOptions& o, uint64_t seed, int64_t id) {
  const Status checked = check_tiny_vlm_options(o);
  TORCH_CHECK(checked.is_ok(), "tiny_vlm_sample: ", checked.message());
  // The sizes are models/flowtrain/tiny_plan.h's, which the process twin replays.
  models::flowtrain::TinyFacts facts;
  facts.tokens_per_image = o.tokens_per_image();
  facts.max_images = o.max_images;
  facts.context = o.context;
  facts.text_scale = o.text_scale;
  const models::flowtrain::TinySample sizes = models::flowtrain::tiny_sample(facts, seed, id);
  const int64_t k = sizes.images, t = sizes.text;

  // A stream of its own (not dataset_sample's), so the sizes and the content are independent.
  at::Generator generator =
      at::detail::createCPUGenerator(mix64(seed ^ mix64(static_cast<uint64_t>(id) + 0x7f4a7c15ull)));
  TinyVlmSample sample;
  sample.id = id;
  // Element-wise ops only (no reductions), so the pixels are the same whatever the thread count.
  const torch::Tensor brightness = torch::rand({k}, generator);
  sample.images =
      brightness.view({k, 1, 1, 1}) + 0.1 * torch::randn({k, o.channels, o.image_size, o.image_size}, generator);
  double mean_brightness = 0;
  for (int64_t i = 0; i < k; ++i)
    mean_brightness += brightness[i].item<double>() / static_cast<double>(k);
  const int64_t stride = k == 0 ? 1 : 1 + std::min<int64_t>(3, static_cast<int64_t>(4 * mean_brightness));

  // Per token: a draw for "follow the rule?" and a draw for the token it would be otherwise.
  const torch::Tensor draws = torch::rand({t, 2}, generator, torch::TensorOptions().dtype(torch::kDouble));
  const auto u = draws.accessor<double, 2>();
  auto uniform_token = [&](int64_t j) {
    return std::min<int64_t>(o.vocab - 1, static_cast<int64_t>(u[j][1] * o.vocab));
  };
  sample.text = torch::empty({t}, torch::TensorOptions().dtype(torch::kLong));
  auto tokens = sample.text.accessor<int64_t, 1>();
  tokens[0] = uniform_token(0);
  for (int64_t j = 1; j < t; ++j)
    tokens[j] = u[j][0] < 0.9 ? (tokens[j - 1] + stride) % o.vocab : uniform_token(j);
  return sample;
}

}  // namespace clustertwin::real::flowtrain
