#include "real/core/communicator.h"

#include <algorithm>
#include <functional>

#include "real/core/device.h"

namespace clustertwin::real {

StatusOr<std::unique_ptr<Communicator>> Communicator::connect(const DistEnv& env, const CommOptions& options) {
  if (options.backend != "auto" && options.backend != "gloo" && options.backend != "nccl") {
    return Status::invalid_argument("backend '" + options.backend + "': unknown backend (allowed: auto, gloo, nccl)");
  }
  const DeviceSupport support = device_support();
  auto device = choose_device(options.device, env.local_rank, support);
  if (!device.is_ok()) return device.status();
  // NCCL wants one GPU per rank: two ranks on one GPU are refused by NCCL itself.
  const bool own_gpu = device->is_cuda() && env.local_world_size <= support.gpus;
  if (options.backend == "nccl") {
    if (!compat::nccl_available()) {
      return Status::invalid_argument("backend nccl: this build's libtorch has no c10d NCCL (use gloo)");
    }
    if (!device->is_cuda()) {
      return Status::invalid_argument("backend nccl: the tensors are on the CPU (device " + options.device +
                                      "); NCCL needs cuda and a GPU per rank");
    }
    if (!own_gpu) {
      return Status::invalid_argument("backend nccl: " + std::to_string(env.local_world_size) +
                                      " ranks on this node share " + std::to_string(support.gpus) +
                                      " GPU(s), and NCCL refuses two ranks on one GPU; use gloo (GPU "
                                      "tensors are then staged through host memory)");
    }
  }
  std::unique_ptr<Communicator> c(new Communicator(env, options));
  c->device_ = *device;
  c->backend_ = options.backend != "auto" ? options.backend : (own_gpu && compat::nccl_available() ? "nccl" : "gloo");
  try {
    c->store_ = compat::make_tcp_store(env.master_addr, env.master_port, env.rank, env.world_size, options.timeout);
  } catch (const std::exception& e) {
    return Status::internal("rank " + std::to_string(env.rank) + ": rendezvous at " + env.master_addr + ":" +
                            std::to_string(env.master_port) + " failed: " + std::string(e.what()).substr(0, 300));
  }
  return c;
}

std::string Communicator::staging() const {
  if (backend_ == "gloo" && device_.is_cuda()) return "host";
  return options_.stage_always ? "always (testing)" : "none";
}

std::string Communicator::describe() const {
  return "device " + describe_device(device_) + ", backend " + backend_ + ", staging " + staging();
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
  return make_group(members, channel, backend_ == "nccl");
}

StatusOr<Group*> Communicator::control_group(const std::vector<int>& members, int channel) {
  return make_group(members, channel, false);
}

StatusOr<Group*> Communicator::make_group(const std::vector<int>& members, int channel, bool nccl) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(nccl, channel, members);
  auto it = groups_.find(key);
  if (it != groups_.end()) return it->second.get();
  auto self = std::find(members.begin(), members.end(), rank());
  if (self == members.end())
    return Status::internal("rank " + std::to_string(rank()) + " is not in the group it asked for");
  auto g = std::make_unique<Group>();
  g->members = members;
  g->index = static_cast<int>(self - members.begin());
  g->nccl = nccl;
  // A key every member derives the same way: backend, channel, size, ends and a hash.
  size_t hash = 0;
  for (int m : members)
    hash = hash * 1000003u + static_cast<size_t>(m);
  const std::string prefix = std::string(nccl ? "n/" : "g/") + std::to_string(channel) + "/" +
                             std::to_string(members.size()) + "/" + std::to_string(members.front()) + "-" +
                             std::to_string(members.back()) + "/" + std::to_string(hash);
  try {
    auto store = compat::make_prefix_store(prefix, store_);
    g->pg = nccl ? compat::make_nccl_group(store, g->index, g->size(), options_.timeout)
                 : compat::make_gloo_group(store, g->index, g->size(), options_.timeout, env_.master_addr);
  } catch (const std::exception& e) {
    return failed("creating the process group of " + std::to_string(members.size()) + " ranks", e);
  }
  Group* out = g.get();
  groups_.emplace(key, std::move(g));
  return out;
}

at::Tensor Communicator::staged_input(const at::Tensor& t, const Group& g) const {
  const at::Device where = device_of(g);
  if (t.device() != where) return t.to(where);
  return options_.stage_always ? t.clone() : t;
}

at::Tensor Communicator::staged_output(const at::Tensor& t, const Group& g) const {
  const at::Device where = device_of(g);
  return t.device() == where && !options_.stage_always ? t : at::empty_like(t, t.options().device(where));
}

void Communicator::unstage(at::Tensor& t, const at::Tensor& staged) {
  if (!staged.is_same(t)) t.copy_(staged);
}

namespace {

// Runs a c10d call and waits for it, turning exceptions into a Status.
template <class Fn>
Status run(const std::string& what, std::chrono::milliseconds timeout, Fn&& fn,
           const std::function<Status(const std::string&, const std::exception&)>& failed) {
  try {
    compat::WorkPtr work = fn();
    compat::wait(work, timeout);
  } catch (const std::exception& e) {
    return failed(what, e);
  }
  return Status::ok();
}

}  // namespace

#define CT_C10D(what, expr)                                              \
  run(                                                                   \
      what, options_.timeout, [&]() -> compat::WorkPtr { return expr; }, \
      [this](const std::string& w, const std::exception& e) { return failed(w, e); })

Status Communicator::all_reduce(Group& g, at::Tensor& t) {
  std::vector<at::Tensor> tensors{staged_input(t, g)};
  CT_RETURN_IF_ERROR(CT_C10D("all-reduce", g.pg->allreduce(tensors)));
  unstage(t, tensors[0]);
  return Status::ok();
}

Status Communicator::all_to_all(Group& g, at::Tensor& out, at::Tensor& in, std::vector<int64_t> out_splits,
                                std::vector<int64_t> in_splits) {
  at::Tensor in_b = staged_input(in, g);
  at::Tensor out_b = staged_output(out, g);
  CT_RETURN_IF_ERROR(CT_C10D("all-to-all", g.pg->alltoall_base(out_b, in_b, out_splits, in_splits)));
  unstage(out, out_b);
  return Status::ok();
}

Status Communicator::all_gather(Group& g, at::Tensor& out, at::Tensor& in) {
  at::Tensor out_b = staged_output(out, g);
  std::vector<std::vector<at::Tensor>> outputs(1, out_b.chunk(g.size()));
  std::vector<at::Tensor> inputs{staged_input(in, g)};
  CT_RETURN_IF_ERROR(CT_C10D("all-gather", g.pg->allgather(outputs, inputs)));
  unstage(out, out_b);
  return Status::ok();
}

Status Communicator::reduce_scatter(Group& g, at::Tensor& out, at::Tensor& in) {
  if (g.nccl) {
    at::Tensor out_b = staged_output(out, g);
    std::vector<at::Tensor> outputs{out_b};
    std::vector<std::vector<at::Tensor>> inputs(1, staged_input(in, g).chunk(g.size()));
    CT_RETURN_IF_ERROR(CT_C10D("reduce-scatter", g.pg->reduce_scatter(outputs, inputs)));
    unstage(out, out_b);
    return Status::ok();
  }
  // Gloo in libtorch 1.13 has no reduce-scatter: send chunk j to rank j
  // (the same (n-1)/n of the buffer on the wire as a ring), then sum.
  at::Tensor received = at::empty_like(in);
  CT_RETURN_IF_ERROR(all_to_all(g, received, in));
  out.copy_(received.view({g.size(), -1}).sum(0).view_as(out));
  return Status::ok();
}

Status Communicator::broadcast(Group& g, at::Tensor& t, int root_index) {
  std::vector<at::Tensor> tensors{staged_input(t, g)};
  c10d::BroadcastOptions options;
  options.rootRank = root_index;
  CT_RETURN_IF_ERROR(CT_C10D("broadcast", g.pg->broadcast(tensors, options)));
  unstage(t, tensors[0]);
  return Status::ok();
}

Status Communicator::send(Group& g, at::Tensor& t, int peer_index, int tag) {
  std::vector<at::Tensor> tensors{staged_input(t, g)};
  return CT_C10D("send", g.pg->send(tensors, peer_index, tag));
}

Status Communicator::recv(Group& g, at::Tensor& t, int peer_index, int tag) {
  std::vector<at::Tensor> tensors{staged_output(t, g)};
  CT_RETURN_IF_ERROR(CT_C10D("recv", g.pg->recv(tensors, peer_index, tag)));
  unstage(t, tensors[0]);
  return Status::ok();
}

StatusOr<PendingSend> Communicator::send_async(Group& g, at::Tensor& t, int peer_index, int tag) {
  std::vector<at::Tensor> tensors{staged_input(t, g)};
  try {
    PendingSend pending;
    pending.work = g.pg->send(tensors, peer_index, tag);
    if (!tensors[0].is_same(t)) pending.staged = tensors[0];
    return pending;
  } catch (const std::exception& e) {
    return failed("send", e);
  }
}

Status Communicator::wait_send(const PendingSend& send) {
  try {
    compat::wait(send.work, options_.timeout);
  } catch (const std::exception& e) {
    return failed("send", e);
  }
  return Status::ok();
}

StatusOr<int> Communicator::recv_any(Group& g, at::Tensor& t, int tag) {
  if (g.nccl) return Status::internal("recv_any on an NCCL group: NCCL cannot receive from any source");
  std::vector<at::Tensor> tensors{staged_output(t, g)};
  compat::WorkPtr work;
  CT_RETURN_IF_ERROR(CT_C10D("recv", (work = g.pg->recvAnysource(tensors, tag))));
  unstage(t, tensors[0]);
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

StatusOr<std::unique_ptr<Communicator>> connect_for_run(const DistEnv& env, const std::string& device,
                                                        const std::string& backend, double timeout_s) {
  if (!(timeout_s > 0)) return Status::invalid_argument("timeout_s " + std::to_string(timeout_s) + ": must be > 0");
  CommOptions options;
  options.device = device;
  options.backend = backend;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  return Communicator::connect(env, options);
}

}  // namespace clustertwin::real
