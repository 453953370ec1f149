// FlowTrain's pools on a GPU through CUDA IPC (pool_transfer.h): the bytes of
// each slot live in a GPU arena beside the pool, allocated by the encoder
// worker that created the pool and mapped by every backbone worker, so an
// embedding goes device to device between processes and the shared memory
// carries only the slots' control words.
//
// Built only against a CUDA-enabled libtorch (CT_CUDA, CT_HAVE_CUDA_TORCH);
// tests/real/cuda_paths_compile_check.sh parses it on machines without one.
//
// The arena is one cudaMalloc of slots x slot bytes, not a block of the
// caching allocator: an IPC handle names a whole allocation, and the caching
// allocator's blocks are parts of larger ones.

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <cstring>

#include "common/check.h"
#include "real/flowtrain/pool_transfer.h"

namespace clustertwin::real::flowtrain {
namespace {

static_assert(sizeof(cudaIpcMemHandle_t) == kCudaIpcHandleBytes, "pool_transfer.h's handle size");

Status cuda_error(cudaError_t e, const std::string& what) {
  // Clears the error this call left, so that ATen's next check does not report it as its own.
  (void)cudaGetLastError();
  return Status::internal("cuda-ipc: " + what + ": " + cudaGetErrorString(e));
}

/// A pool's slots in GPU memory: allocated by this process (exported) or mapped from another's (imported).
class DeviceArena {
 public:
  static StatusOr<std::unique_ptr<DeviceArena>> allocate(c10::Device device, size_t bytes, std::string* handle) {
    c10::cuda::CUDAGuard guard(device);
    void* data = nullptr;
    cudaError_t e = cudaMalloc(&data, bytes);
    if (e != cudaSuccess) return cuda_error(e, "cudaMalloc of " + std::to_string(bytes) + " bytes on " + device.str());
    std::unique_ptr<DeviceArena> arena(new DeviceArena(device, data, /*owner=*/true));
    cudaIpcMemHandle_t h;
    e = cudaIpcGetMemHandle(&h, data);
    if (e != cudaSuccess) return cuda_error(e, "cudaIpcGetMemHandle on " + device.str());
    handle->assign(reinterpret_cast<const char*>(&h), sizeof h);
    return arena;
  }

  static StatusOr<std::unique_ptr<DeviceArena>> map(c10::Device device, const std::string& handle) {
    CT_CHECK(handle.size() == sizeof(cudaIpcMemHandle_t)) << handle.size() << " bytes";
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.data(), sizeof h);
    c10::cuda::CUDAGuard guard(device);
    void* data = nullptr;
    // The arena may live on another GPU of the node: peer access is enabled for it on first use.
    const cudaError_t e = cudaIpcOpenMemHandle(&data, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) return cuda_error(e, "cudaIpcOpenMemHandle on " + device.str());
    return std::unique_ptr<DeviceArena>(new DeviceArena(device, data, /*owner=*/false));
  }

  ~DeviceArena() {
    // The run ends its pools after a barrier, when no process copies from or into them any more.
    c10::cuda::CUDAGuard guard(device_);
    const cudaError_t e = owner_ ? cudaFree(data_) : cudaIpcCloseMemHandle(data_);
    if (e != cudaSuccess) (void)cudaGetLastError();
  }
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  char* slot(int i, size_t slot_bytes) const { return static_cast<char*>(data_) + static_cast<size_t>(i) * slot_bytes; }

 private:
  DeviceArena(c10::Device device, void* data, bool owner) : device_(device), data_(data), owner_(owner) {}

  c10::Device device_;
  void* data_;
  bool owner_;
};

class CudaIpcTensorPool final : public TensorPool {
 public:
  CudaIpcTensorPool(SharedPool& pool, c10::Device device, std::unique_ptr<DeviceArena> arena)
      : pool_(pool), device_(device), arena_(std::move(arena)) {}

  Status put(uint64_t key, const at::Tensor& t, double timeout_s) override {
    check(t);
    const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(float);
    return pool_.put_slot(key, bytes, timeout_s,
                          [&](int slot) { return copy(arena_->slot(slot, pool_.slot_bytes()), t.data_ptr(), bytes); });
  }

  Status take(uint64_t key, at::Tensor& out, double timeout_s) override {
    check(out);
    const size_t bytes = static_cast<size_t>(out.numel()) * sizeof(float);
    auto taken = pool_.take_slot({key}, timeout_s, [&](int slot, uint64_t, size_t held) {
      if (held != bytes) {
        return Status::invalid_argument("cuda-ipc pool: key " + std::to_string(key) + " held " + std::to_string(held) +
                                        " bytes, " + std::to_string(bytes) + " asked");
      }
      return copy(out.data_ptr(), arena_->slot(slot, pool_.slot_bytes()), bytes);
    });
    return taken.is_ok() ? Status::ok() : taken.status();
  }

  StatusOr<TakenTensor> take_any(const std::vector<uint64_t>& wanted, double timeout_s) override {
    at::Tensor values = at::empty({static_cast<int64_t>(pool_.slot_bytes() / sizeof(float))},
                                  at::TensorOptions().dtype(at::kFloat).device(device_));
    auto taken = pool_.take_slot(wanted, timeout_s, [&](int slot, uint64_t, size_t bytes) {
      return copy(values.data_ptr(), arena_->slot(slot, pool_.slot_bytes()), bytes);
    });
    if (!taken.is_ok()) return taken.status();
    TakenTensor out;
    out.key = taken->key;
    out.values = values.slice(0, 0, static_cast<int64_t>(taken->bytes / sizeof(float)));
    return out;
  }

 private:
  void check(const at::Tensor& t) const {
    CT_CHECK(t.device() == device_ && t.is_contiguous() && t.scalar_type() == at::kFloat)
        << t.device() << " " << t.sizes() << " " << t.scalar_type() << ", pool on " << device_;
  }

  // On the current stream, after the work that made the source. The slot changes hands (ready, or free) as soon
  // as the fill or drain returns, and the other process orders nothing after this stream, so the copy must have
  // landed by then: the stream is synchronised (the run synchronises after every traced task on a GPU anyway).
  Status copy(void* dst, const void* src, size_t bytes) const {
    c10::cuda::CUDAGuard guard(device_);
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream(device_.index()).stream();
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) return cuda_error(e, "copy of " + std::to_string(bytes) + " bytes on " + device_.str());
    return Status::ok();
  }

  SharedPool& pool_;
  c10::Device device_;
  std::unique_ptr<DeviceArena> arena_;
};

}  // namespace

StatusOr<std::unique_ptr<TensorPool>> export_cuda_ipc_pool(SharedPool& pool, c10::Device device, std::string* handle) {
  auto arena = DeviceArena::allocate(device, static_cast<size_t>(pool.slots()) * pool.slot_bytes(), handle);
  if (!arena.is_ok()) return arena.status();
  return std::unique_ptr<TensorPool>(new CudaIpcTensorPool(pool, device, std::move(*arena)));
}

StatusOr<std::unique_ptr<TensorPool>> import_cuda_ipc_pool(SharedPool& pool, c10::Device device,
                                                           const std::string& handle) {
  auto arena = DeviceArena::map(device, handle);
  if (!arena.is_ok()) return arena.status();
  return std::unique_ptr<TensorPool>(new CudaIpcTensorPool(pool, device, std::move(*arena)));
}

}  // namespace clustertwin::real::flowtrain
