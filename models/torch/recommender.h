#pragma once

// The dense parts of the recommenders of models/spec/recommender.h as libtorch
// modules, for the real executor. Only torch code (real/) includes this
// header; the plan builders and the twin read the widths from the spec.
//
// The embedding tables are not here: the real executor keeps them in a
// sharded host store, looks the rows up and feeds them in, so every module
// takes looked-up embeddings as input and holds only the data-parallel part.
//
//   DLRM:  dense ─► bottom MLP ─┐
//          embeddings [B,F,d] ──┴► dot interaction ─► top MLP ─► logit [B]
//
//   HSTU:  sequence [B,n,d] ─► HSTU block x num_blocks ─► last position · target ─► logit [B]
//
// Parameter counts equal spec::RecommenderSpec::dense_params() exactly: every
// Linear has a bias (spec::linear_layer counts in*out + out), the interaction
// has none, and the HSTU norm has no affine weights (spec::hstu_block counts
// 5d^2 + 5d).
//
// Initialisation comes from an explicit CPU generator seeded by the caller,
// never from the global torch RNG, so two ranks building with the same seed
// hold bitwise-identical parameters whatever else ran before in the process.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "models/spec/recommender.h"

namespace clustertwin::models::nets {

// ---------------------------------------------------------------------------
// DLRM
// ---------------------------------------------------------------------------

/// Widths of a DLRM dense part. bottom_mlp runs dense_features -> ... ->
/// embedding_dim; top_mlp runs embedding_dim + V(V-1)/2 -> ... -> 1 with
/// V = num_embeddings + 1 (the looked-up vectors plus the bottom output).
struct DlrmDenseOptions {
  int64_t dense_features = 0;
  int64_t embedding_dim = 0;
  int64_t num_embeddings = 0;  // F: pooled embedding vectors per sample
  std::vector<int64_t> bottom_mlp;
  std::vector<int64_t> top_mlp;
};

/// The options of a "dlrm" spec, or InvalidArgument naming the spec and its
/// family when it is not one.
StatusOr<DlrmDenseOptions> dlrm_dense_options(const spec::RecommenderSpec& spec);

/// DLRM's dense part (Naumov et al. 2019): bottom MLP with ReLU after every
/// layer, dot interaction, top MLP with ReLU between layers and a linear last
/// layer of width 1.
///
/// The interaction stacks Z = [bottom(dense); e_1; ...; e_F] (V = F + 1 rows
/// of width d) and keeps the dot products z_i . z_j for i < j, in row-major
/// order of the upper triangle: (0,1), (0,2), ..., (0,F), (1,2), ... The
/// reference keeps the lower triangle of Z Z^T; the set of pairs is the same,
/// only their order in the top MLP's input differs.
class DlrmDenseImpl : public torch::nn::Module {
 public:
  /// Checks the widths chain (TORCH_CHECK, the bad width in the message).
  explicit DlrmDenseImpl(DlrmDenseOptions options);

  /// dense [B, dense_features], embeddings [B, F, d] -> logits [B].
  torch::Tensor forward(const torch::Tensor& dense, const torch::Tensor& embeddings);

  /// [bottom output, pair dot products]: the top MLP's input, [B, d + V(V-1)/2].
  torch::Tensor interact(const torch::Tensor& bottom_out, const torch::Tensor& embeddings) const;

  const DlrmDenseOptions& options() const { return options_; }
  const std::vector<torch::nn::Linear>& bottom_layers() const { return bottom_; }
  const std::vector<torch::nn::Linear>& top_layers() const { return top_; }

 private:
  DlrmDenseOptions options_;
  std::vector<torch::nn::Linear> bottom_;
  std::vector<torch::nn::Linear> top_;
  torch::Tensor pair_rows_;  // buffers: the (i, j) of the pairs i < j
  torch::Tensor pair_cols_;
};
TORCH_MODULE(DlrmDense);

// ---------------------------------------------------------------------------
// HSTU
// ---------------------------------------------------------------------------

/// One HSTU block over tokens of width `dim`, split into `heads` heads.
struct HstuBlockOptions {
  int64_t dim = 0;
  int64_t heads = 1;
};

/// One HSTU block, following the block structure of the HSTU paper (Zhai et
/// al., "Actions Speak Louder than Words", ICML 2024, eqs. 1-3): pointwise
/// projection, pointwise aggregated (not softmax) attention, gated norm:
///
///   U, V, Q, K = Split(SiLU(f1(X)))            f1: Linear d -> 4d
///   A          = SiLU(Q K^T) / n  (causal)     per head, head width d / heads
///   Y          = X + f2(LayerNorm(A V) * U)    f2: Linear d -> d
///
/// Simplified against the paper and its reference code: no relative
/// attention bias (positional or temporal), no input norm before f1, no
/// dropout, no jagged (variable-length) sequences, the divisor n is the
/// given sequence's length; LayerNorm over the full width d without affine
/// weights. With heads == 1 it is single-head attention.
class HstuBlockImpl : public torch::nn::Module {
 public:
  /// Needs dim > 0 and heads dividing dim (TORCH_CHECK).
  explicit HstuBlockImpl(HstuBlockOptions options);

  /// x [B, n, d] -> [B, n, d]; position i depends on positions <= i only.
  torch::Tensor forward(const torch::Tensor& x);

  const HstuBlockOptions& options() const { return options_; }
  torch::nn::Linear& f1() { return f1_; }
  torch::nn::Linear& f2() { return f2_; }

 private:
  HstuBlockOptions options_;
  torch::nn::Linear f1_{nullptr};
  torch::nn::Linear f2_{nullptr};
};
TORCH_MODULE(HstuBlock);

/// Widths of an HSTU dense part.
struct HstuDenseOptions {
  int64_t embedding_dim = 0;
  int64_t num_blocks = 0;
  int64_t heads = 1;
};

/// The options of an "hstu" spec, or InvalidArgument naming the spec and its
/// family when it is not one.
StatusOr<HstuDenseOptions> hstu_dense_options(const spec::RecommenderSpec& spec);

/// num_blocks HSTU blocks over the looked-up sequence; the last position's
/// output dotted with the target item's embedding is the logit.
class HstuDenseImpl : public torch::nn::Module {
 public:
  explicit HstuDenseImpl(HstuDenseOptions options);

  /// sequence [B, n, d], target [B, d] -> logits [B].
  torch::Tensor forward(const torch::Tensor& sequence, const torch::Tensor& target);

  const HstuDenseOptions& options() const { return options_; }
  const std::vector<HstuBlock>& blocks() const { return blocks_; }

 private:
  HstuDenseOptions options_;
  std::vector<HstuBlock> blocks_;
};
TORCH_MODULE(HstuDense);

// ---------------------------------------------------------------------------
// Factories
// ---------------------------------------------------------------------------

/// Re-initialises every parameter of `module` from a CPU generator seeded
/// with `seed`, in registration order: a Linear's weight and bias uniform in
/// +-1/sqrt(in_features) (torch's default bound for Linear). Deterministic
/// whatever the global RNG state; the module must be on the CPU.
void init_parameters(torch::nn::Module& module, uint64_t seed);

/// Built on the CPU and initialised with init_parameters(seed); move with
/// .to(device) afterwards.
DlrmDense make_dlrm_dense(const DlrmDenseOptions& options, uint64_t seed);
HstuDense make_hstu_dense(const HstuDenseOptions& options, uint64_t seed);

/// The dense part of any shipped family as an AnyModule whose forward takes
/// two tensors ((dense, embeddings) for dlrm, (sequence, target) for hstu)
/// and returns logits [B]; InvalidArgument for an unknown family.
StatusOr<torch::nn::AnyModule> make_dense_model(const spec::RecommenderSpec& spec, uint64_t seed);

}  // namespace clustertwin::models::nets
