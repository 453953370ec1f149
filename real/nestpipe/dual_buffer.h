#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>

#include "common/status.h"
#include "real/nestpipe/embedding_store.h"

namespace clustertwin::real::nestpipe {

struct DualBufferOptions {
  at::Device device = at::kCPU;
  /// False turns patch() into a no-op: the negative control of DBP, whose
  /// version oracle must then fail on the rows shared by consecutive batches.
  bool patch_enabled = true;
};

/// NestPipe's dual-buffer synchronization (DBP), on the owner side.
///
/// Two row buffers swap roles every batch: batch t trains from Active while
/// batch t+1's rows are fetched into Prefetch. Batch t's update then makes
/// the rows shared by t and t+1 stale in Prefetch, so after the swap they are
/// refreshed from the store before t+1 uses them:
///
///   prefetch(t+1) -> Prefetch      apply_gradients(t) -> store
///   swap()                         Prefetch becomes Active
///   patch(keys of t)               Active rows in keys(t) <- store
///   check_versions()               every Active row at the store's version
///
/// Each buffer keeps the keys it holds (owner-local, deduplicated by the
/// caller), their rows on `device`, and the version each row had when read:
/// the per-row version oracle of the paper's proof of synchronous semantics.
class DualBuffer {
 public:
  DualBuffer(int64_t dim, DualBufferOptions options = {});

  /// Reads the rows of `keys` from `store` into Prefetch (replacing what it
  /// held) and records their versions. On error (a key the store does not
  /// own, a dim that is not the buffer's) Prefetch is left unchanged.
  Status prefetch(const EmbeddingStore& store, const at::Tensor& keys);

  /// The second half of prefetch, for executors that gather on one stream
  /// and copy on another: copies `rows` [n, dim] (gathered from the store
  /// earlier, on the host) to `device` as the new Prefetch buffer, with
  /// their `keys` [n] and read `versions` [n]. InvalidArgument (Prefetch
  /// unchanged) when the shapes disagree.
  Status load_prefetch(const at::Tensor& keys, const at::Tensor& rows, const at::Tensor& versions);

  /// Active becomes Prefetch and Prefetch becomes Active.
  void swap();

  /// Refreshes the Active rows whose keys are in `keys_updated` (the rows
  /// the last update touched since Active was prefetched) with the store's
  /// current rows and versions. Returns how many rows it refreshed: 0 when
  /// the patch is disabled. Errors as in prefetch; Active unchanged then.
  StatusOr<int64_t> patch(const EmbeddingStore& store, const at::Tensor& keys_updated);

  /// The version oracle: ok when every Active row carries the store's
  /// current version; else Internal naming the first stale key, the version
  /// it was read at and the current one.
  Status check_versions(const EmbeddingStore& store) const;

  /// Active's keys [n] (CPU int64), rows [n, dim] (on device) and read
  /// versions [n] (CPU int64).
  const at::Tensor& active_keys() const { return buffers_[active_].keys; }
  const at::Tensor& active_rows() const { return buffers_[active_].rows; }
  const at::Tensor& active_versions() const { return buffers_[active_].versions; }
  const at::Tensor& prefetch_keys() const { return buffers_[1 - active_].keys; }

 private:
  struct Buffer {
    at::Tensor keys;
    at::Tensor rows;
    at::Tensor versions;
  };
  Buffer empty_buffer() const;

  int64_t dim_;
  DualBufferOptions options_;
  std::array<Buffer, 2> buffers_;
  int active_ = 0;
};

}  // namespace clustertwin::real::nestpipe
