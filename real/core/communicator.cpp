#include "real/core/communicator.h"

#include <torch/cuda.h>

#include <functional>

namespace clustertwin::real {

StatusOr<std::unique_ptr<Communicator>> Communicator::connect(const DistEnv& env, const CommOptions& options) {
  if (options.backend != "auto" && options.backend != "gloo" && options.backend != "nccl") {
    return Status::invalid_argument("--backend '" + options.backend + "': unknown backend (allowed: auto, gloo, nccl)");
  }
  std::unique_ptr<Communicator> c(new Communicator(env, options));
  const bool gpu = compat::nccl_available() && torch::cuda::device_count() > 0;
  if (options.backend == "nccl" && !gpu) {
    return Status::invalid_argument("--backend nccl: this build has no c10d NCCL or no GPU is visible");
  }
  c->backend_ = options.backend == "auto" ? (gpu ? "nccl" : "gloo") : options.backend;
  if (c->backend_ == "nccl") {
    c->device_ = at::Device(at::kCUDA, static_cast<at::DeviceIndex>(env.local_rank % torch::cuda::device_count()));
  }
  try {
    c->store_ = compat::make_tcp_store(env.master_addr, env.master_port, env.rank, env.world_size, options.timeout);
  } catch (const std::exception& e) {
    return Status::internal("rank " + std::to_string(env.rank) + ": rendezvous at " + env.master_addr + ":" +
                            std::to_string(env.master_port) + " failed: " + std::string(e.what()).substr(0, 300));
  }
  return c;
}

std::vector<int> Communicator::all_ranks() const {
  std::vector<int> r(world_size());
  for (int i = 0; i < world_size(); ++i)
    r[i] = i;
  return r;
}

Status Communicator::failed(const std::string& what, const std::exception& e) const {
  std::string message = e.what();
  const size_t newline = message.find('\n');  // c10::Error appends a backtrace
  if (newline != std::string::npos) message.resize(newline);
  return Status::internal("rank " + std::to_string(rank()) + ": " + what + " failed: " + message);
}

StatusOr<Group*> Communicator::group(const std::vector<int>& members, int channel) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(channel, members);
  auto it = groups_.find(key);
  if (it != groups_.end()) return it->second.get();
  auto self = std::find(members.begin(), members.end(), rank());
  if (self == members.end())
    return Status::internal("rank " + std::to_string(rank()) + " is not in the group it asked for");
  auto g = std::make_unique<Group>();
  g->members = members;
  g->index = static_cast<int>(self - members.begin());
  // A key every member derives the same way: channel, size, ends and a hash.
  size_t hash = 0;
  for (int m : members)
    hash = hash * 1000003u + static_cast<size_t>(m);
  const std::string prefix = "g/" + std::to_string(channel) + "/" + std::to_string(members.size()) + "/" +
                             std::to_string(members.front()) + "-" + std::to_string(members.back()) + "/" +
                             std::to_string(hash);
  try {
    auto store = compat::make_prefix_store(prefix, store_);
    g->pg = backend_ == "nccl"
                ? compat::make_nccl_group(store, g->index, g->size(), options_.timeout)
                : compat::make_gloo_group(store, g->index, g->size(), options_.timeout, env_.master_addr);
  } catch (const std::exception& e) {
    return failed("creating the process group of " + std::to_string(members.size()) + " ranks", e);
  }
  Group* out = g.get();
  groups_.emplace(key, std::move(g));
  return out;
}

namespace {

// Runs a c10d call and waits for it, turning exceptions into a Status.
template <class Fn>
Status run(const Communicator& c, const std::string& what, std::chrono::milliseconds timeout, Fn&& fn,
           const std::function<Status(const std::string&, const std::exception&)>& failed) {
  try {
    compat::WorkPtr work = fn();
    compat::wait(work, timeout);
  } catch (const std::exception& e) {
    return failed(what, e);
  }
  (void)c;
  return Status::ok();
}

}  // namespace

#define CT_C10D(what, expr)                                                     \
  run(                                                                          \
      *this, what, options_.timeout, [&]() -> compat::WorkPtr { return expr; }, \
      [this](const std::string& w, const std::exception& e) { return failed(w, e); })

Status Communicator::all_reduce(Group& g, at::Tensor& t) {
  std::vector<at::Tensor> tensors{t};
  return CT_C10D("all-reduce", g.pg->allreduce(tensors));
}

Status Communicator::all_to_all(Group& g, at::Tensor& out, at::Tensor& in, std::vector<int64_t> out_splits,
                                std::vector<int64_t> in_splits) {
  return CT_C10D("all-to-all", g.pg->alltoall_base(out, in, out_splits, in_splits));
}

Status Communicator::all_gather(Group& g, at::Tensor& out, at::Tensor& in) {
  std::vector<std::vector<at::Tensor>> outputs(1, out.chunk(g.size()));
  std::vector<at::Tensor> inputs{in};
  return CT_C10D("all-gather", g.pg->allgather(outputs, inputs));
}

Status Communicator::reduce_scatter(Group& g, at::Tensor& out, at::Tensor& in) {
  if (backend_ == "nccl") {
    std::vector<at::Tensor> outputs{out};
    std::vector<std::vector<at::Tensor>> inputs(1, in.chunk(g.size()));
    return CT_C10D("reduce-scatter", g.pg->reduce_scatter(outputs, inputs));
  }
  // Gloo in libtorch 1.13 has no reduce-scatter: send chunk j to rank j
  // (the same (n-1)/n of the buffer on the wire as a ring), then sum.
  at::Tensor received = at::empty_like(in);
  CT_RETURN_IF_ERROR(all_to_all(g, received, in));
  out.copy_(received.view({g.size(), -1}).sum(0).view_as(out));
  return Status::ok();
}

Status Communicator::broadcast(Group& g, at::Tensor& t, int root_index) {
  std::vector<at::Tensor> tensors{t};
  c10d::BroadcastOptions options;
  options.rootRank = root_index;
  return CT_C10D("broadcast", g.pg->broadcast(tensors, options));
}

Status Communicator::send(Group& g, at::Tensor& t, int peer_index, int tag) {
  std::vector<at::Tensor> tensors{t};
  return CT_C10D("send", g.pg->send(tensors, peer_index, tag));
}

Status Communicator::recv(Group& g, at::Tensor& t, int peer_index, int tag) {
  std::vector<at::Tensor> tensors{t};
  return CT_C10D("recv", g.pg->recv(tensors, peer_index, tag));
}

StatusOr<compat::WorkPtr> Communicator::send_async(Group& g, at::Tensor& t, int peer_index, int tag) {
  std::vector<at::Tensor> tensors{t};
  try {
    return g.pg->send(tensors, peer_index, tag);
  } catch (const std::exception& e) {
    return failed("send", e);
  }
}

Status Communicator::wait_send(const compat::WorkPtr& work) {
  try {
    compat::wait(work, options_.timeout);
  } catch (const std::exception& e) {
    return failed("send", e);
  }
  return Status::ok();
}

StatusOr<int> Communicator::recv_any(Group& g, at::Tensor& t, int tag) {
  std::vector<at::Tensor> tensors{t};
  compat::WorkPtr work;
  CT_RETURN_IF_ERROR(CT_C10D("recv", (work = g.pg->recvAnysource(tensors, tag))));
  try {
    return work->sourceRank();
  } catch (const std::exception& e) {
    return failed("recv (source)", e);
  }
}

Status Communicator::barrier(Group& g) {
  return CT_C10D("barrier", g.pg->barrier());
}

#undef CT_C10D

StatusOr<std::unique_ptr<Communicator>> connect_cpu(const DistEnv& env, const std::string& backend, double timeout_s,
                                                    const std::string& command) {
  CommOptions options;
  options.backend = backend;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  auto comm = Communicator::connect(env, options);
  if (!comm.is_ok()) return comm.status();
  if ((*comm)->device().type() != at::kCPU) {
    return Status::invalid_argument("--backend " + backend + ": chose " + (*comm)->backend() + "; " + command +
                                    " keeps its tensors on the CPU, use --backend gloo");
  }
  return comm;
}

}  // namespace clustertwin::real
