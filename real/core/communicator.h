#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "real/core/c10d_compat.h"
#include "real/core/dist_env.h"

namespace clustertwin::real {

struct CommOptions {
  /// How long a rendezvous or a collective may wait for the other ranks
  /// before it fails (never a hang): a dead peer turns into an error.
  std::chrono::milliseconds timeout{30000};
  /// Where the command keeps its tensors: "cpu", "cuda" or "auto" (cuda
  /// when this libtorch has CUDA and a GPU is visible), see device.h.
  std::string device = "cpu";
  /// "gloo", "nccl" or "auto": NCCL when the tensors are on GPUs and every
  /// rank of the node has a GPU of its own (NCCL refuses two ranks on one
  /// GPU), else Gloo.
  std::string backend = "auto";
  /// Testing: stage every tensor (copy it in and out) as between devices,
  /// so that the staging path runs on a machine without a GPU.
  bool stage_always = false;
};

/// One process group of some ranks on one channel. Collectives issued on a
/// group run in issue order on every member; give each stream of a plan its
/// own channel so that streams never reorder each other's collectives.
struct Group {
  compat::GroupPtr pg;
  std::vector<int> members;  // global ranks, ascending
  int index = 0;             // this rank's index in members
  bool nccl = false;         // else Gloo
  int size() const { return static_cast<int>(members.size()); }
};

/// A send under way (Communicator::send_async); keeps what it sends alive.
struct PendingSend {
  compat::WorkPtr work;
  at::Tensor staged;  // the host (Gloo) or device (NCCL) copy that is on the wire, when one was made
};

/// This process's connection to the others: rendezvous through a c10d
/// TCPStore at MASTER_ADDR:MASTER_PORT, then Gloo or NCCL process groups
/// created on first use.
///
/// Tensors may live anywhere: a collective on a tensor that is not where its
/// group's backend works (a GPU tensor on a Gloo group, as when several ranks
/// share one GPU; a CPU tensor on an NCCL group) is staged: copied there,
/// run, and copied back. `staging()` says which of the two this
/// communicator's data groups do. Control groups are always Gloo: they carry
/// the small messages that must be received from any source, which NCCL
/// cannot do.
///
/// Every collective returns a Status: a peer that died or never came shows
/// up as an error naming the operation after `timeout`, not as a hang.
class Communicator {
 public:
  /// InvalidArgument naming the device or backend field for a choice this build
  /// or machine cannot make; Internal when the rendezvous fails.
  static StatusOr<std::unique_ptr<Communicator>> connect(const DistEnv& env, const CommOptions& options);

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const DistEnv& env() const { return env_; }
  /// The data groups' backend: "gloo" or "nccl".
  const std::string& backend() const { return backend_; }
  /// Where this rank's tensors live: cuda:(LOCAL_RANK mod GPUs) or the CPU.
  at::Device device() const { return device_; }
  /// "none", "host" (GPU tensors through host memory for Gloo) or "device"
  /// (CPU tensors through the GPU for NCCL): what data collectives stage.
  std::string staging() const;
  /// One line for a command's first output: "device cuda:0 (NVIDIA H200, ...), backend gloo, staging host".
  std::string describe() const;
  std::chrono::milliseconds timeout() const { return options_.timeout; }

  /// The group of `members` (ascending global ranks, this rank among them)
  /// on `channel`, created on first use; every member must create the same
  /// groups. Thread-safe.
  StatusOr<Group*> group(const std::vector<int>& members, int channel);
  /// All ranks on `channel`.
  StatusOr<Group*> world(int channel) { return group(all_ranks(), channel); }
  /// A Gloo group of `members` on `channel` whatever the data backend: for
  /// receives from any source and other host-side messages.
  StatusOr<Group*> control_group(const std::vector<int>& members, int channel);
  std::vector<int> all_ranks() const;

  // Collectives, blocking until done. Sizes follow nccl-tests: all_gather's
  // `out` holds n chunks of `in`, reduce_scatter's `in` n chunks of `out`.
  Status all_reduce(Group& g, at::Tensor& t);
  Status all_to_all(Group& g, at::Tensor& out, at::Tensor& in, std::vector<int64_t> out_splits = {},
                    std::vector<int64_t> in_splits = {});
  Status all_gather(Group& g, at::Tensor& out, at::Tensor& in);
  Status reduce_scatter(Group& g, at::Tensor& out, at::Tensor& in);
  Status broadcast(Group& g, at::Tensor& t, int root_index);
  Status send(Group& g, at::Tensor& t, int peer_index, int tag);
  Status recv(Group& g, at::Tensor& t, int peer_index, int tag);
  /// Starts sending `t` and returns without waiting: a send completes only
  /// once the peer posts its receive, and a rank that must keep receiving
  /// meanwhile (a controller) cannot block on it. Keep `t` alive until the
  /// send is done (wait_send).
  StatusOr<PendingSend> send_async(Group& g, at::Tensor& t, int peer_index, int tag);
  /// Waits for a send_async to complete, within the timeout.
  Status wait_send(const PendingSend& send);
  /// Receives `t` with `tag` from whichever member sends first; its index.
  /// Gloo groups only (control_group when the data backend is NCCL).
  StatusOr<int> recv_any(Group& g, at::Tensor& t, int tag);
  Status barrier(Group& g);

 private:
  Communicator(DistEnv env, CommOptions options) : env_(std::move(env)), options_(std::move(options)) {}
  StatusOr<Group*> make_group(const std::vector<int>& members, int channel, bool nccl);
  Status failed(const std::string& what, const std::exception& e) const;
  /// Where group `g`'s backend wants tensors.
  at::Device device_of(const Group& g) const { return g.nccl ? device_ : at::Device(at::kCPU); }
  /// `t` where group `g`'s backend wants it (itself when it is there); a
  /// buffer there for an output shaped like `t`; the result copied back.
  at::Tensor staged_input(const at::Tensor& t, const Group& g) const;
  at::Tensor staged_output(const at::Tensor& t, const Group& g) const;
  static void unstage(at::Tensor& t, const at::Tensor& staged);

  DistEnv env_;
  CommOptions options_;
  std::string backend_ = "gloo";
  at::Device device_ = at::Device(at::kCPU);
  compat::StorePtr store_;
  std::mutex mutex_;
  std::map<std::tuple<bool, int, std::vector<int>>, std::unique_ptr<Group>> groups_;
};

/// Connects a `run` command: its device, backend and timeout_s (seconds)
/// fields as the user gave them; errors name the field ("backend 'mpi': ...",
/// see Communicator::connect), the command line maps it to its flag.
StatusOr<std::unique_ptr<Communicator>> connect_for_run(const DistEnv& env, const std::string& device,
                                                        const std::string& backend, double timeout_s);

}  // namespace clustertwin::real
