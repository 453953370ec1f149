#pragma once

// How FlowTrain's memory pool (memory_pool.h) moves tensors between the
// processes of one node. The pools' control words are always in POSIX
// shared memory; the bytes travel one of three ways:
//
//   host           on the CPU: the tensor's bytes are copied into the slot's
//                  shared memory and out into the consumer's tensor
//   host (pinned)  on a GPU: device -> pinned host buffer -> slot; slot ->
//                  pinned host buffer -> device (non_blocking, on the
//                  consumer's current stream)
//   cuda-ipc       on a GPU: each pool's slots get a GPU arena beside them,
//                  allocated by the pool's creator and mapped by every other
//                  process through a CUDA IPC handle; the bytes go device to
//                  device and never touch host memory
//
//   encoder worker e         pool "emb e"           backbone worker b
//   encoder forward  --put-->  [slot][slot]..  --take-->  backbone forward
//                                                         and backward
//   encoder backward <--take-- [slot][slot]..  <--put---  embeddings' gradient
//                              pool "grad e"
//
// cuda-ipc is chosen on a GPU unless --pool-transfer host says otherwise;
// where a rank cannot export or map GPU memory (no CUDA build, a container
// without IPC), every rank falls back to pinned host memory together, or
// fails when cuda-ipc was asked for by name.

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "real/core/shared_pool.h"

namespace clustertwin::real {
class Communicator;
struct Group;
}  // namespace clustertwin::real

namespace clustertwin::real::flowtrain {

/// Whether this build has the cuda-ipc transfer (CT_CUDA on: cuda_ipc_pool.cpp).
bool cuda_ipc_built();

/// What TensorPool::take_any took.
struct TakenTensor {
  uint64_t key = 0;
  at::Tensor values;  // float32, flat, on the pool's device
};

/// One shared pool of float32 tensors on the run's device.
class TensorPool {
 public:
  virtual ~TensorPool() = default;
  /// Puts `t` (contiguous float32 on the pool's device) under `key`; waits
  /// for a free slot and fails as SharedPool::put does.
  virtual Status put(uint64_t key, const at::Tensor& t, double timeout_s) = 0;
  /// Takes `key`'s tensor into `out` (contiguous float32 on the pool's
  /// device, as many elements as were put); waits and fails as SharedPool::take.
  virtual Status take(uint64_t key, at::Tensor& out, double timeout_s) = 0;
  /// Takes whichever key of `wanted` (sorted) is ready first.
  virtual StatusOr<TakenTensor> take_any(const std::vector<uint64_t>& wanted, double timeout_s) = 0;
};

/// The shape of a flowtrain run's pools.
struct PoolLayout {
  std::string base;          // shared-memory name prefix, unique to the run ("/ct_ft_PORT_")
  int encoders = 1;          // one embedding pool and one gradient pool per encoder worker (ranks [0, E))
  int embedding_slots = 16;  // --pool-slots: how far an encoder worker may run ahead
  int gradient_slots = 16;   // a whole step's samples: a backbone never waits for an encoder to take one
  size_t slot_bytes = 0;     // the largest sample's embeddings
};

/// Every pool of a flowtrain run as this rank sees it: an encoder worker its
/// own two, a backbone worker every encoder's.
class FlowPools {
 public:
  /// Collective over `world` (every rank calls it): encoder workers create
  /// their pools, the others open them, and the ranks agree on the transfer
  /// (`transfer`: auto, host or cuda-ipc; see above). Internal when the
  /// system refuses the shared memory, or cuda-ipc was asked for and a rank
  /// could not share GPU memory.
  static StatusOr<std::unique_ptr<FlowPools>> connect(Communicator& comm, Group& world, const PoolLayout& layout,
                                                      const std::string& transfer);
  ~FlowPools();
  FlowPools(const FlowPools&) = delete;
  FlowPools& operator=(const FlowPools&) = delete;

  /// Encoder worker `e`'s pools (this rank's own, or opened from it).
  TensorPool& embeddings(int e);
  TensorPool& gradients(int e);
  /// "host", "host (pinned)" or "cuda-ipc": what moves the bytes.
  const std::string& transfer() const { return transfer_; }
  /// Slots ready (put, not yet taken) over every pool this rank sees.
  int ready() const;

 private:
  FlowPools() = default;
  /// Collective; `own_failure` says whether this rank's own export or mapping failed.
  Status connect_cuda_ipc(Communicator& comm, int encoders, bool* own_failure);
  void use_host(c10::Device device);

  std::vector<std::unique_ptr<SharedPool>> embedding_shm_, gradient_shm_;  // per encoder worker; null if not seen
  std::vector<std::unique_ptr<TensorPool>> embeddings_, gradients_;        // over the shared pools above
  std::string transfer_ = "host";
};

#if defined(CT_HAVE_CUDA_TORCH)
// The cuda-ipc transfer, in cuda_ipc_pool.cpp (built with CT_CUDA only).
constexpr size_t kCudaIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)
/// A GPU arena on `device` for `pool`'s slots, owned by this process; its IPC handle in `handle`.
StatusOr<std::unique_ptr<TensorPool>> export_cuda_ipc_pool(SharedPool& pool, c10::Device device, std::string* handle);
/// Another process's arena for `pool`, mapped on `device` from its IPC handle.
StatusOr<std::unique_ptr<TensorPool>> import_cuda_ipc_pool(SharedPool& pool, c10::Device device,
                                                           const std::string& handle);
#endif

}  // namespace clustertwin::real::flowtrain
