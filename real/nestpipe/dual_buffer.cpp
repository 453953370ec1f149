#include "real/nestpipe/dual_buffer.h"

#include <sstream>

namespace clustertwin::real::nestpipe {
namespace {

Status check_dim(const EmbeddingStore& store, int64_t dim) {
  if (store.dim() == dim) return Status::ok();
  std::ostringstream s;
  s << "dual buffer: store of rank " << store.rank() << " has dim " << store.dim() << ", the buffer has dim " << dim;
  return Status::invalid_argument(s.str());
}

}  // namespace

DualBuffer::DualBuffer(int64_t dim, DualBufferOptions options) : dim_(dim), options_(options) {
  buffers_[0] = empty_buffer();
  buffers_[1] = empty_buffer();
}

DualBuffer::Buffer DualBuffer::empty_buffer() const {
  return {at::empty({0}, at::kLong),
          at::empty({0, dim_}, at::TensorOptions().dtype(at::kFloat).device(options_.device)),
          at::empty({0}, at::kLong)};
}

Status DualBuffer::prefetch(const EmbeddingStore& store, const at::Tensor& keys) {
  CT_RETURN_IF_ERROR(check_dim(store, dim_));
  auto rows = store.gather(keys);
  if (!rows.is_ok()) return rows.status().with_context("dual buffer: prefetch");
  auto versions = store.versions(keys);
  if (!versions.is_ok()) return versions.status().with_context("dual buffer: prefetch");
  buffers_[1 - active_] = {keys.to(at::kCPU).contiguous().clone(), rows->to(options_.device), *versions};
  return Status::ok();
}

Status DualBuffer::load_prefetch(const at::Tensor& keys, const at::Tensor& rows, const at::Tensor& versions) {
  const int64_t n = keys.numel();
  if (keys.dim() != 1 || keys.scalar_type() != at::kLong || rows.dim() != 2 || rows.size(0) != n ||
      rows.size(1) != dim_ || rows.scalar_type() != at::kFloat || versions.dim() != 1 || versions.numel() != n ||
      versions.scalar_type() != at::kLong) {
    std::ostringstream s;
    s << "dual buffer: load_prefetch: keys " << keys.sizes() << " (" << keys.scalar_type() << "), rows " << rows.sizes()
      << " (" << rows.scalar_type() << "), versions " << versions.sizes() << " (" << versions.scalar_type()
      << "): want int64 [n], float [n, " << dim_ << "], int64 [n]";
    return Status::invalid_argument(s.str());
  }
  // A real copy even when the device is the CPU: the buffer must not alias
  // the gathered rows, which the caller may reuse.
  // non_blocking: from pinned host memory the copy runs on the calling
  // thread's stream while the host goes on (the caching host allocator keeps
  // the source alive until it is done); from pageable memory it is a plain copy.
  at::Tensor on_device = at::empty(rows.sizes(), rows.options().device(options_.device));
  on_device.copy_(rows, /*non_blocking=*/true);
  buffers_[1 - active_] = {keys.to(at::kCPU).contiguous().clone(), on_device, versions.to(at::kCPU).clone()};
  return Status::ok();
}

void DualBuffer::swap() {
  active_ = 1 - active_;
}

StatusOr<int64_t> DualBuffer::patch(const EmbeddingStore& store, const at::Tensor& keys_updated) {
  CT_RETURN_IF_ERROR(check_dim(store, dim_));
  if (!options_.patch_enabled) return int64_t{0};
  Buffer& active = buffers_[active_];
  const at::Tensor updated = keys_updated.to(at::kCPU);
  if (updated.scalar_type() != at::kLong || updated.dim() != 1) {
    std::ostringstream s;
    s << "dual buffer: patch: keys_updated must be a 1-D int64 tensor, got " << updated.scalar_type() << " of shape "
      << updated.sizes();
    return Status::invalid_argument(s.str());
  }
  // The intersection of Active's keys with the updated ones: those rows were
  // read before the update and are stale now.
  const at::Tensor positions = at::isin(active.keys, updated).nonzero().view({-1});
  if (positions.numel() == 0) return int64_t{0};
  const at::Tensor stale_keys = active.keys.index_select(0, positions);
  auto rows = store.gather(stale_keys);
  if (!rows.is_ok()) return rows.status().with_context("dual buffer: patch");
  auto versions = store.versions(stale_keys);
  if (!versions.is_ok()) return versions.status().with_context("dual buffer: patch");
  // On a GPU this is the paper's device-to-device copy: the updated rows are
  // resident; here the store's host rows stand in for them.
  active.rows.index_copy_(0, positions.to(options_.device), rows->to(options_.device));
  active.versions.index_copy_(0, positions, *versions);
  return positions.numel();
}

Status DualBuffer::check_versions(const EmbeddingStore& store) const {
  const Buffer& active = buffers_[active_];
  auto current = store.versions(active.keys);
  if (!current.is_ok()) return current.status().with_context("dual buffer: version oracle");
  const at::Tensor stale = active.versions.ne(*current).nonzero().view({-1});
  if (stale.numel() == 0) return Status::ok();
  const int64_t i = stale[0].item<int64_t>();
  std::ostringstream s;
  s << "dual buffer: version oracle: stale row: key " << active.keys[i].item<int64_t>() << " was read at version "
    << active.versions[i].item<int64_t>() << ", the store (rank " << store.rank() << ") is at version "
    << (*current)[i].item<int64_t>() << " (" << stale.numel() << " of " << active.keys.numel() << " active rows stale)";
  return Status::internal(s.str());
}

}  // namespace clustertwin::real::nestpipe
