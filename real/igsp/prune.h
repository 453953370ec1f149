#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "common/status.h"

// Pruning kernels for one linear layer: SparseGPT, Wanda and magnitude, as
// ../shared/papers/igsp.md describes them. A layer-sequential pruner over a
// model feeds each layer's calibration inputs to a HessianAccumulator (and a
// ColumnNormAccumulator for Wanda), prunes the layer, then re-runs the inputs
// through the pruned layer to feed the next one.
//
//   inputs x [tokens, columns] --> HessianAccumulator --> H [columns, columns] --> sparsegpt(W, H)
//                             \--> ColumnNormAccumulator --> ||X_j|| [columns] --> wanda(W, norms)
//
// Nothing here records gradients: a model's weights can be passed as they are.
// Every kernel is deterministic: ties between equal scores are broken by
// position (the lower row-major index is pruned first), never by chance.
//
// Mask counts. Unstructured sparsity s prunes exactly floor(s x count) entries
// of each selection unit (a 128-column block for SparseGPT, a row for Wanda and
// magnitude). A product that is an integer up to rounding (0.57 x 100) counts as
// that integer. The reference SparseGPT prunes every score <= the sorted
// score at index int(s x count), which is at least one more and more on ties.
namespace clustertwin::real::igsp {

/// What to prune and how SparseGPT regularises its Hessian.
struct PruneOptions {
  double sparsity = 0.5;        // unstructured fraction in [0, 1); ignored when m > 0
  int n = 0, m = 0;             // N:M when m > 0: prune n of every m consecutive columns of a row
  int block_size = 128;         // SparseGPT's columns per block (a multiple of m for N:M)
  double damping = 0.01;        // lambda = damping x mean(diag H), added to the diagonal; > 0
  int max_damping_retries = 5;  // a failed Cholesky multiplies damping by 10, this many times at most
  // The precision of the arithmetic (float or double). Float is what the
  // reference uses and runs twice as fast; double is for checking against
  // closed forms. Inputs are cast to it; the pruned weight comes back in the
  // weight's own dtype.
  at::ScalarType compute_dtype = at::kFloat;
  // SparseGPT's column-by-column loop: kRows, a hand-written loop over each
  // row's contiguous block (rows in parallel); kLibtorchCalls, the reference's
  // formulation, a few libtorch calls per column. Both give the same bits at
  // one thread (tested); the second is the benchmark's reference point.
  enum class ColumnLoop { kRows, kLibtorchCalls };
  ColumnLoop column_loop = ColumnLoop::kRows;
};

/// A pruned layer.
struct PruneResult {
  at::Tensor weight;        // [rows, columns], the weight's dtype, pruned entries exactly 0
  at::Tensor mask;          // [rows, columns] bool, true = kept (dead input columns are zeroed whatever it says)
  double damping = 0;       // SparseGPT: the relative damping that made H positive definite; 0 otherwise
  int damping_retries = 0;  // SparseGPT: how many times it was raised
  // SparseGPT: the reference's reconstruction loss, the sum over blocks and
  // rows of (w - q)^2 / H_inv[i,i]^2 / 2. The updates are exact for a quadratic,
  // so it equals sum over rows of d^T H_damped d / 2 with d = W - W': under
  // H = (2/N) X^T X, ||(W - W') X^T||_F^2 / N + lambda ||W - W'||_F^2 / 2.
  // 0 for Wanda and magnitude.
  double loss = 0;
};

/// H = (2/N) sum x x^T over every calibration token x seen by one linear
/// layer with `columns` inputs, kept as the reference keeps it, a running
/// average: for each batch of b tokens, H *= N/(N+b); N += b; H += y y^T with
/// y = sqrt(2/N) x. N counts tokens (the reference counts sequences, which
/// scales H by the sequence length and changes only PruneResult::loss).
class HessianAccumulator {
 public:
  /// `dtype`: float, as the reference, or double. Float's GEMM is twice as
  /// fast, and the running average keeps H's entries at the scale of x x^T, so
  /// rounding grows with the number of batches only (tests: 4e-7 relative
  /// after 128 batches).
  HessianAccumulator(std::string layer_name, int64_t columns, at::ScalarType dtype = at::kFloat);

  /// Adds a batch of inputs [..., columns] (leading dimensions are tokens).
  /// InvalidArgument, naming the layer and the shape, when x is not floating
  /// point or its last dimension is not `columns`; H is then unchanged.
  Status add(const at::Tensor& x);

  /// [columns, columns]; zeros before the first token. On the device of the first batch.
  const at::Tensor& hessian() const { return hessian_; }
  /// Tokens seen (N).
  int64_t samples() const { return samples_; }

 private:
  std::string layer_name_;
  int64_t columns_;
  at::ScalarType dtype_;
  at::Tensor hessian_;
  int64_t samples_ = 0;
};

/// ||X_j||_2 for every input column j over the calibration tokens (Wanda's
/// input statistic), from a running sum of squares in double. Feed it the same
/// batches as a HessianAccumulator.
class ColumnNormAccumulator {
 public:
  ColumnNormAccumulator(std::string layer_name, int64_t columns);

  /// As HessianAccumulator::add.
  Status add(const at::Tensor& x);

  /// [columns] double: sqrt(sum over tokens of x_j^2).
  at::Tensor norms() const { return sum_of_squares_.sqrt(); }
  int64_t samples() const { return samples_; }

 private:
  std::string layer_name_;
  int64_t columns_;
  at::Tensor sum_of_squares_;
  int64_t samples_ = 0;
};

/// SparseGPT (Frantar & Alistarh 2023), step by step as the reference:
/// dead inputs (H_ii == 0) get H_ii = 1 and a zero weight column; lambda =
/// damping x mean(diag H) on the diagonal; H_inv = upper Cholesky factor of
/// H^-1; per block of block_size columns the mask is chosen once
/// (unstructured: lowest W^2 / diag(H_inv)^2 over the block; N:M: per row, at
/// the first column of each group), then column by column the pruned entries
/// are zeroed and the error spread over the block's later columns, and after
/// the block over all later columns (the lazy update).
///
/// `weight` [rows, columns] floating point, `hessian` [columns, columns].
/// InvalidArgument naming `layer_name`, the field and the value for a bad
/// option or shape, and "<layer>: the Hessian is not positive definite even
/// with damping D (N retries); ..." when raising the damping does not help.
StatusOr<PruneResult> sparsegpt(const at::Tensor& weight, const at::Tensor& hessian, const PruneOptions& options,
                                const std::string& layer_name);

/// SparseGPT's weight reconstruction for a mask chosen elsewhere (`keep`
/// [rows, columns] bool, true = kept); options.sparsity, n and m are not used.
/// Each pruned weight's error is compensated only by later columns, so this is
/// the exact OBS solve for the mask when each row's pruned columns come before
/// its kept ones; otherwise it costs at least as much as that solve.
StatusOr<PruneResult> sparsegpt_with_mask(const at::Tensor& weight, const at::Tensor& hessian, const at::Tensor& keep,
                                          const PruneOptions& options, const std::string& layer_name);

/// Wanda (Sun et al. 2023): score |W_ij| x ||X_j||_2, each row pruned on its
/// own (exactly floor(sparsity x columns) per row, or n of every m), no weight
/// update. `input_norms` [columns], e.g. ColumnNormAccumulator::norms().
StatusOr<PruneResult> wanda(const at::Tensor& weight, const at::Tensor& input_norms, const PruneOptions& options,
                            const std::string& layer_name);

/// Magnitude pruning: score |W_ij|, row by row as wanda.
StatusOr<PruneResult> magnitude(const at::Tensor& weight, const PruneOptions& options, const std::string& layer_name);

/// The number of entries that unstructured `sparsity` prunes out of `count`:
/// floor(sparsity x count), where a product within 1e-9 relative of an
/// integer counts as that integer.
int64_t pruned_count(double sparsity, int64_t count);

}  // namespace clustertwin::real::igsp
