#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace clustertwin::real::nestpipe {

/// The optimizer an owner applies to its embedding rows, once per batch.
struct EmbeddingOptimizer {
  enum class Kind { kSgd, kRowWiseAdagrad };
  Kind kind = Kind::kSgd;
  float lr = 0.01f;
  float eps = 1e-8f;                // row-wise Adagrad only
  float initial_accumulator = 0.f;  // row-wise Adagrad only

  static EmbeddingOptimizer sgd(float lr) { return {Kind::kSgd, lr, 0.f, 0.f}; }
  static EmbeddingOptimizer rowwise_adagrad(float lr, float eps, float initial_accumulator) {
    return {Kind::kRowWiseAdagrad, lr, eps, initial_accumulator};
  }
};

struct EmbeddingStoreOptions {
  int64_t rows = 0;  // rows of the whole table, over all ranks
  int64_t dim = 0;
  int rank = 0;
  int world = 1;
  uint64_t seed = 0;
  EmbeddingOptimizer optimizer;
  /// Where the rows and accumulators live: the CPU (host memory, as the
  /// paper keeps its tables) or a GPU. Versions stay in host memory.
  at::Device device = at::kCPU;
  /// Host rows in pinned (page-locked) memory, so that their copies to a GPU
  /// run asynchronously; only with a CUDA-enabled libtorch.
  bool pinned = false;
  /// Apply gradients with whole-tensor operations even in host memory (the
  /// GPU's path; tests compare it with the bitwise host path).
  bool whole_tensor_update = false;
};

/// This rank's shard of one embedding table, in host memory (CPU tensors) or
/// on a GPU (options.device).
///
/// Row-wise modulo sharding, as `Sharding::kModulo` in key_stats.h:
///
///   global key k  ->  owner k mod W, local row k / W
///   rank 1 of W=4, rows=10:  keys 1, 5, 9  ->  local rows 0, 1, 2
///
/// Every row starts from a value that depends only on (seed, global key), so
/// a store on any rank of any world holds the same row for the same key: runs
/// with different pipelines or worlds can be compared bitwise.
///
/// Each local row carries a version: the number of apply_gradients calls that
/// touched it. That is the oracle of NestPipe's synchronous semantics: a row
/// read for batch t must carry the version the store has when t uses it.
///
/// Every method that takes keys wants a 1-D int64 tensor of global keys, all
/// owned by this rank; any other key is an InvalidArgument naming the key,
/// the rank and the world, and nothing is read or changed.
class EmbeddingStore {
 public:
  /// A store of `options.rank`'s rows, initialised from `options.seed`.
  /// InvalidArgument when rows or dim < 1, world < 1, rank outside [0, world),
  /// lr <= 0, eps < 0 or initial_accumulator < 0.
  static StatusOr<EmbeddingStore> create(const EmbeddingStoreOptions& options);

  /// The initial value of element `j` of the row of global `key`: uniform in
  /// [-1/sqrt(dim), 1/sqrt(dim)), from a hash of (seed, key, j).
  static float initial_value(uint64_t seed, int64_t key, int64_t j, int64_t dim);

  // Tensors are shared by copy, so a copied store would alias the original's
  // rows: copies are explicit (clone), moves are free.
  EmbeddingStore(EmbeddingStore&&) = default;
  EmbeddingStore& operator=(EmbeddingStore&&) = default;
  EmbeddingStore(const EmbeddingStore&) = delete;
  EmbeddingStore& operator=(const EmbeddingStore&) = delete;

  /// A deep copy: weights, optimizer state and versions.
  EmbeddingStore clone() const;

  /// Replaces the local rows, accumulators and versions (a checkpoint's, as
  /// weights(), accumulators() and the versions of the local keys give them),
  /// keeping their device and memory. InvalidArgument naming the tensor whose
  /// shape or type is not the store's; nothing changes then.
  Status restore(const at::Tensor& weights, const at::Tensor& accumulators, const at::Tensor& versions);

  /// [n, dim] float copy of the rows of `keys` (stage 4's retrieval), on the
  /// store's device.
  StatusOr<at::Tensor> gather(const at::Tensor& keys) const;

  /// Applies one batch's gradients: `grads` is [n, dim] float for the n
  /// entries of `keys` (on any device). Repeated keys are summed first, then
  /// each distinct row gets one optimizer step and one more version. In host
  /// memory the sums run in the order the keys appear (the order fixes the
  /// rounding: equal inputs give bitwise equal rows); on a GPU they run as
  /// one index_add, whose order the device chooses. On error nothing changes.
  Status apply_gradients(const at::Tensor& keys, const at::Tensor& grads);

  /// [n] int64: the version of each key's row.
  StatusOr<at::Tensor> versions(const at::Tensor& keys) const;

  /// Bitwise equality of layout, weights, optimizer state and versions.
  bool equal(const EmbeddingStore& other) const;

  int rank() const { return options_.rank; }
  int world() const { return options_.world; }
  int64_t rows() const { return options_.rows; }
  int64_t dim() const { return options_.dim; }
  int64_t local_rows() const { return weights_.size(0); }
  at::Device device() const { return weights_.device(); }
  const EmbeddingStoreOptions& options() const { return options_; }

  /// The local rows, [local_rows, dim]: for inspection, not for updates.
  const at::Tensor& weights() const { return weights_; }
  /// Row-wise Adagrad's accumulators, [local_rows] (all zero for SGD).
  const at::Tensor& accumulators() const { return accumulators_; }

 private:
  EmbeddingStore() = default;
  explicit EmbeddingStore(const EmbeddingStoreOptions& options);

  /// The local row indices of `keys` (a contiguous CPU int64 tensor), or why
  /// one key is not this rank's. `what` names the tensor in messages.
  StatusOr<at::Tensor> local_indices(const at::Tensor& keys, const char* what) const;
  std::string describe() const;
  /// apply_gradients' two paths, once the arguments are checked.
  void apply_on_host(const at::Tensor& local, const at::Tensor& grads);
  void apply_on_device(const at::Tensor& local, const at::Tensor& grads);

  EmbeddingStoreOptions options_;
  at::Tensor weights_;       // [local_rows, dim] float
  at::Tensor accumulators_;  // [local_rows] float
  at::Tensor versions_;      // [local_rows] int64
};

}  // namespace clustertwin::real::nestpipe
