// FlowTrain's pools of tensors (pool_transfer.h): the host transfer and the
// agreement on which transfer runs. The cuda-ipc transfer is in
// cuda_ipc_pool.cpp.

#include "real/flowtrain/pool_transfer.h"

#include <cstdio>
#include <cstring>

#include "common/check.h"
#include "real/core/communicator.h"

namespace clustertwin::real::flowtrain {
namespace {

// The control group on which the ranks exchange IPC handles (the run's own groups use channels 0-2).
constexpr int kHandleChannel = 5;

at::TensorOptions host_floats(c10::Device device) {
  return at::TensorOptions().dtype(at::kFloat).pinned_memory(device.is_cuda());
}

/// The bytes through the pool's shared memory; on a GPU through pinned host buffers, whose copies to and from the
/// device run on the caller's current stream.
class HostTensorPool final : public TensorPool {
 public:
  HostTensorPool(SharedPool& pool, c10::Device device) : pool_(pool), device_(device) {}

  Status put(uint64_t key, const at::Tensor& t, double timeout_s) override {
    CT_CHECK(t.is_contiguous() && t.scalar_type() == at::kFloat) << t.sizes() << " " << t.scalar_type();
    const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(float);
    if (t.is_cpu()) return pool_.put(key, t.data_ptr<float>(), bytes, timeout_s);
    // A blocking copy: the bytes must be in host memory before they go into the slot.
    at::Tensor host = at::empty(t.sizes(), host_floats(device_));
    host.copy_(t);
    return pool_.put(key, host.data_ptr<float>(), bytes, timeout_s);
  }

  Status take(uint64_t key, at::Tensor& out, double timeout_s) override {
    CT_CHECK(out.is_contiguous() && out.scalar_type() == at::kFloat) << out.sizes() << " " << out.scalar_type();
    const size_t bytes = static_cast<size_t>(out.numel()) * sizeof(float);
    if (out.is_cpu()) return pool_.take(key, out.data_ptr<float>(), bytes, timeout_s);
    at::Tensor host = at::empty(out.sizes(), host_floats(device_));
    CT_RETURN_IF_ERROR(pool_.take(key, host.data_ptr<float>(), bytes, timeout_s));
    // non_blocking from pinned memory: the copy runs on the current stream, and the caching host allocator keeps
    // `host`'s block from reuse until that copy is done, though `host` goes out of scope now.
    out.copy_(host, /*non_blocking=*/true);
    return Status::ok();
  }

  StatusOr<TakenTensor> take_any(const std::vector<uint64_t>& wanted, double timeout_s) override {
    const size_t capacity = pool_.slot_bytes();
    at::Tensor host = at::empty({static_cast<int64_t>(capacity / sizeof(float))}, host_floats(device_));
    auto taken = pool_.take_any(wanted, host.data_ptr<float>(), capacity, timeout_s);
    if (!taken.is_ok()) return taken.status();
    TakenTensor out;
    out.key = taken->key;
    out.values = host.slice(0, 0, static_cast<int64_t>(taken->bytes / sizeof(float)));
    if (device_.is_cuda()) out.values = out.values.to(device_, /*non_blocking=*/true);
    return out;
  }

 private:
  SharedPool& pool_;
  c10::Device device_;
};

}  // namespace

bool cuda_ipc_built() {
#if defined(CT_HAVE_CUDA_TORCH)
  return true;
#else
  return false;
#endif
}

FlowPools::~FlowPools() {
  // The tensor pools (and their GPU arenas) before the shared memory they use.
  embeddings_.clear();
  gradients_.clear();
}

StatusOr<std::unique_ptr<FlowPools>> FlowPools::connect(Communicator& comm, Group& world, const PoolLayout& layout,
                                                        const std::string& transfer) {
  CT_CHECK(layout.encoders >= 1 && layout.encoders < comm.world_size()) << layout.encoders;
  std::unique_ptr<FlowPools> p(new FlowPools());
  const int rank = comm.rank(), encoders = layout.encoders;
  p->embedding_shm_.resize(static_cast<size_t>(encoders));
  p->gradient_shm_.resize(static_cast<size_t>(encoders));
  // Each encoder worker creates its own pools and the backbone workers open every encoder's: a producer waits only
  // on its own slots, which its earlier samples hold, so the smallest sample not yet consumed can always be made and
  // taken (a pool shared by all producers could fill with later samples while an earlier one waits).
  if (rank < encoders) {
    auto e = SharedPool::create(layout.base + "emb" + std::to_string(rank), layout.embedding_slots, layout.slot_bytes);
    if (!e.is_ok()) return e.status();
    auto g = SharedPool::create(layout.base + "grad" + std::to_string(rank), layout.gradient_slots, layout.slot_bytes);
    if (!g.is_ok()) return g.status();
    p->embedding_shm_[rank] = std::move(*e);
    p->gradient_shm_[rank] = std::move(*g);
  }
  CT_RETURN_IF_ERROR(comm.barrier(world));
  if (rank >= encoders) {
    for (int e = 0; e < encoders; ++e) {
      auto emb = SharedPool::open(layout.base + "emb" + std::to_string(e));
      if (!emb.is_ok()) return emb.status();
      auto grad = SharedPool::open(layout.base + "grad" + std::to_string(e));
      if (!grad.is_ok()) return grad.status();
      p->embedding_shm_[e] = std::move(*emb);
      p->gradient_shm_[e] = std::move(*grad);
    }
  }
  CT_RETURN_IF_ERROR(comm.barrier(world));

  if (comm.device().is_cuda() && cuda_ipc_built() && transfer != "host") {
    bool own_failure = false;
    const Status ipc = p->connect_cuda_ipc(comm, encoders, &own_failure);
    if (ipc.is_ok()) {
      p->transfer_ = "cuda-ipc";
      return p;
    }
    if (transfer == "cuda-ipc") return ipc;
    if (own_failure || rank == 0) {
      std::fprintf(stderr, "run flowtrain: rank %d: no cuda-ipc (%s); the pools stage through pinned host memory\n",
                   rank, ipc.message().c_str());
    }
  }
  p->use_host(comm.device());
  return p;
}

void FlowPools::use_host(c10::Device device) {
  embeddings_.clear();
  gradients_.clear();
  embeddings_.resize(embedding_shm_.size());
  gradients_.resize(gradient_shm_.size());
  for (size_t e = 0; e < embedding_shm_.size(); ++e) {
    if (embedding_shm_[e]) embeddings_[e] = std::make_unique<HostTensorPool>(*embedding_shm_[e], device);
    if (gradient_shm_[e]) gradients_[e] = std::make_unique<HostTensorPool>(*gradient_shm_[e], device);
  }
  transfer_ = device.is_cuda() ? "host (pinned)" : "host";
}

// Every encoder worker exports its two arenas and broadcasts their handles; every backbone worker maps them. All
// ranks or none: a rank that fails still takes part in every broadcast, then the failures are counted.
Status FlowPools::connect_cuda_ipc(Communicator& comm, int encoders, bool* own_failure) {
#if defined(CT_HAVE_CUDA_TORCH)
  auto control = comm.control_group(comm.all_ranks(), kHandleChannel);
  if (!control.is_ok()) return control.status();
  const int rank = comm.rank();
  const c10::Device device = comm.device();
  embeddings_.clear();
  gradients_.clear();
  embeddings_.resize(embedding_shm_.size());
  gradients_.resize(gradient_shm_.size());
  Status mine = Status::ok();
  for (int e = 0; e < encoders; ++e) {
    // Both handles, then 1 when the encoder exported them.
    at::Tensor handles = at::zeros({static_cast<int64_t>(2 * kCudaIpcHandleBytes + 1)}, at::kByte);
    if (e == rank) {
      std::string emb_handle, grad_handle;
      auto emb = export_cuda_ipc_pool(*embedding_shm_[e], device, &emb_handle);
      auto grad = emb.is_ok() ? export_cuda_ipc_pool(*gradient_shm_[e], device, &grad_handle) : emb.status();
      if (emb.is_ok() && grad.is_ok()) {
        embeddings_[e] = std::move(*emb);
        gradients_[e] = std::move(*grad);
        auto* bytes = handles.data_ptr<uint8_t>();
        std::memcpy(bytes, emb_handle.data(), kCudaIpcHandleBytes);
        std::memcpy(bytes + kCudaIpcHandleBytes, grad_handle.data(), kCudaIpcHandleBytes);
        bytes[2 * kCudaIpcHandleBytes] = 1;
      } else {
        mine = emb.is_ok() ? grad.status() : emb.status();
      }
    }
    CT_RETURN_IF_ERROR(comm.broadcast(**control, handles, e));
    const auto* bytes = handles.data_ptr<uint8_t>();
    if (rank < encoders || !mine.is_ok() || bytes[2 * kCudaIpcHandleBytes] != 1) continue;
    const std::string emb_handle(reinterpret_cast<const char*>(bytes), kCudaIpcHandleBytes);
    const std::string grad_handle(reinterpret_cast<const char*>(bytes) + kCudaIpcHandleBytes, kCudaIpcHandleBytes);
    auto emb = import_cuda_ipc_pool(*embedding_shm_[e], device, emb_handle);
    auto grad = emb.is_ok() ? import_cuda_ipc_pool(*gradient_shm_[e], device, grad_handle) : emb.status();
    if (emb.is_ok() && grad.is_ok()) {
      embeddings_[e] = std::move(*emb);
      gradients_[e] = std::move(*grad);
    } else {
      mine = emb.is_ok() ? grad.status() : emb.status();
    }
  }
  at::Tensor failures = at::full({1}, mine.is_ok() ? 0.0 : 1.0, at::kFloat);
  CT_RETURN_IF_ERROR(comm.all_reduce(**control, failures));
  *own_failure = !mine.is_ok();
  if (!mine.is_ok()) return mine;
  const int failed = static_cast<int>(failures.item<float>());
  if (failed > 0) {
    return Status::internal("cuda-ipc: " + std::to_string(failed) +
                            " other rank(s) could not share their pools' GPU memory (their errors say why)");
  }
  return Status::ok();
#else
  (void)comm;
  (void)encoders;
  *own_failure = true;
  return Status::internal("cuda-ipc: this build has no CUDA (CT_CUDA off)");
#endif
}

TensorPool& FlowPools::embeddings(int e) {
  CT_CHECK(e >= 0 && e < static_cast<int>(embeddings_.size()) && embeddings_[e]) << "encoder worker " << e;
  return *embeddings_[e];
}

TensorPool& FlowPools::gradients(int e) {
  CT_CHECK(e >= 0 && e < static_cast<int>(gradients_.size()) && gradients_[e]) << "encoder worker " << e;
  return *gradients_[e];
}

int FlowPools::ready() const {
  int n = 0;
  for (const auto* pools : {&embedding_shm_, &gradient_shm_}) {
    for (const std::unique_ptr<SharedPool>& pool : *pools)
      n += pool ? pool->ready() : 0;
  }
  return n;
}

}  // namespace clustertwin::real::flowtrain
