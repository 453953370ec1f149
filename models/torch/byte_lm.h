#pragma once

// A small byte-level decoder-only transformer (GPT-style, pre-norm) for the
// IGSP study: trained on this machine on four domains, pruned layer by layer
// with SparseGPT (real/igsp). Only torch code (real/, experiments) includes
// this header.
//
//   bytes [B,T] ─► token + position embedding ─► block x layers ─► LayerNorm ─► head ─► logits [B,T,256]
//   block:  x += out(attention(q(LN1 x), k(LN1 x), v(LN1 x)))    causal, `heads` heads
//           x += fc2(GELU(fc1(LN2 x)))
//
// The six Linears of a block are what pruning touches; the embeddings, the
// norms and the head are not pruned (as in SparseGPT's reference). A block's
// forward can report each Linear's input (`LinearTap`), which is how a
// layer-sequential pruner collects its calibration statistics.
//
// Initialisation comes from an explicit CPU generator seeded by the caller
// (GPT-2's: normal(0, 0.02) weights, zero biases, unit norms), so the same
// seed gives bitwise-identical parameters whatever else ran in the process.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/torch/byte_lm_options.h"

namespace clustertwin::models::nets {

/// Called with a Linear's name within its block ("q", "k", "v", "out",
/// "fc1", "fc2") and the input it is about to multiply, [B, T, in].
using LinearTap = std::function<void(const std::string& linear, const torch::Tensor& input)>;

/// One block's keys and values for incremental decoding: buffers of
/// [B, H, capacity, d/H] (undefined before the first call; then allocated
/// for the model's context) of which the first `length` positions are filled.
struct KvCache {
  torch::Tensor k, v;
  int64_t length = 0;
};

class ByteLmBlockImpl : public torch::nn::Module {
 public:
  explicit ByteLmBlockImpl(const ByteLmOptions& options);

  /// x [B, T, d] -> [B, T, d]; position t depends on positions <= t only.
  /// With a cache, x holds the positions after the cached ones, which they
  /// attend to as well; the cache grows by x's positions.
  torch::Tensor forward(const torch::Tensor& x, const LinearTap& tap = nullptr, KvCache* cache = nullptr);

  /// The block's Linears in the order the forward uses them.
  std::vector<std::pair<std::string, torch::nn::Linear>> linears() const;

 private:
  int64_t heads_, context_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear q_{nullptr}, k_{nullptr}, v_{nullptr}, out_{nullptr}, fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(ByteLmBlock);

class ByteLmImpl : public torch::nn::Module {
 public:
  explicit ByteLmImpl(ByteLmOptions options);

  /// bytes [B, T] (int64, values in [0, vocab), T <= context) -> logits [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& bytes);

  /// Incremental decoding: `bytes` [B, n] continue the sequences `state`
  /// has seen (an empty state: from the start), their logits [B, n, vocab]
  /// equal forward's on the whole sequence at those positions, and the state
  /// keeps them. The whole sequence must fit the context.
  struct DecodeState {
    std::vector<KvCache> blocks;
    int64_t length = 0;
  };
  torch::Tensor decode(const torch::Tensor& bytes, DecodeState& state);

  /// The pieces of forward, for a pruner that runs one block at a time.
  /// `offset`: the position of bytes' first column.
  torch::Tensor embed(const torch::Tensor& bytes, int64_t offset = 0);
  torch::Tensor logits(const torch::Tensor& hidden);
  std::vector<ByteLmBlock>& blocks() { return blocks_; }

  const ByteLmOptions& options() const { return options_; }

 private:
  ByteLmOptions options_;
  torch::nn::Embedding token_{nullptr}, position_{nullptr};
  std::vector<ByteLmBlock> blocks_;
  torch::nn::LayerNorm final_norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(ByteLm);

/// A model with `options` (checked first) and parameters seeded by `seed`.
StatusOr<ByteLm> make_byte_lm(const ByteLmOptions& options, uint64_t seed);

/// The parameter count of a model with `options`, from the widths alone.
int64_t byte_lm_params(const ByteLmOptions& options);

/// Writes the model (its options and every parameter) to `path`
/// atomically; `meta` (JSON text: how it was trained) goes along.
Status save_byte_lm(ByteLm& model, const std::string& meta_json, const std::string& path);

/// A checkpoint of save_byte_lm: InvalidArgument naming the file for one
/// that is not (not a torch archive, options missing or bad, a parameter
/// missing or of the wrong shape); NotFound when there is no such file.
struct ByteLmCheckpoint {
  ByteLm model{nullptr};
  std::string meta_json;
};
StatusOr<ByteLmCheckpoint> load_byte_lm(const std::string& path);

}  // namespace clustertwin::models::nets
