#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "models/common/status.h"
#include "real/core/c10d_compat.h"
#include "real/core/dist_env.h"

namespace clustertwin::real {

struct CommOptions {
  /// How long a rendezvous or a collective may wait for the other ranks
  /// before it fails (never a hang): a dead peer turns into an error.
  std::chrono::milliseconds timeout{30000};
  /// "gloo", "nccl" or "auto" (NCCL when this libtorch has it and a GPU is visible).
  std::string backend = "auto";
};

/// One process group of some ranks on one channel. Collectives issued on a
/// group run in issue order on every member; give each stream of a plan its
/// own channel so that streams never reorder each other's collectives.
struct Group {
  compat::GroupPtr pg;
  std::vector<int> members;  // global ranks, ascending
  int index = 0;             // this rank's index in members
  int size() const { return static_cast<int>(members.size()); }
};

/// This process's connection to the others: rendezvous through a c10d
/// TCPStore at MASTER_ADDR:MASTER_PORT, then Gloo (CPU) or NCCL (GPU)
/// process groups created on first use.
///
/// Every collective returns a Status: a peer that died or never came shows
/// up as an error naming the operation after `timeout`, not as a hang.
class Communicator {
 public:
  static StatusOr<std::unique_ptr<Communicator>> connect(const DistEnv& env, const CommOptions& options);

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const DistEnv& env() const { return env_; }
  const std::string& backend() const { return backend_; }
  /// Where this rank's tensors live: cuda:LOCAL_RANK with NCCL, else the CPU.
  at::Device device() const { return device_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }

  /// The group of `members` (ascending global ranks, this rank among them)
  /// on `channel`, created on first use; every member must create the same
  /// groups. Thread-safe.
  StatusOr<Group*> group(const std::vector<int>& members, int channel);
  /// All ranks on `channel`.
  StatusOr<Group*> world(int channel) { return group(all_ranks(), channel); }
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
  /// work is done (wait_send).
  StatusOr<compat::WorkPtr> send_async(Group& g, at::Tensor& t, int peer_index, int tag);
  /// Waits for a send_async to complete, within the timeout.
  Status wait_send(const compat::WorkPtr& work);
  /// Receives `t` with `tag` from whichever member sends first; its index.
  StatusOr<int> recv_any(Group& g, at::Tensor& t, int tag);
  Status barrier(Group& g);

 private:
  Communicator(DistEnv env, CommOptions options) : env_(std::move(env)), options_(std::move(options)) {}
  Status failed(const std::string& what, const std::exception& e) const;

  DistEnv env_;
  CommOptions options_;
  std::string backend_ = "gloo";
  at::Device device_ = at::Device(at::kCPU);
  compat::StorePtr store_;
  std::mutex mutex_;
  std::map<std::pair<int, std::vector<int>>, std::unique_ptr<Group>> groups_;
};

/// Connects for a command that keeps its tensors on the CPU (`run nestpipe`,
/// `run flexmarl`): `backend` ("gloo" or "auto") with a timeout in seconds;
/// InvalidArgument naming `command` when the backend chosen is not on the CPU.
StatusOr<std::unique_ptr<Communicator>> connect_cpu(const DistEnv& env, const std::string& backend, double timeout_s,
                                                    const std::string& command);

}  // namespace clustertwin::real
