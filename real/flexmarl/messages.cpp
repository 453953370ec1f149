#include "real/flexmarl/messages.h"

#include <vector>

#include "real/core/device.h"
#include "real/flexmarl/host_device.h"

namespace clustertwin::real::flexmarl {
namespace {

constexpr int kHeaderTag = 101, kF64Tag = 102, kI64Tag = 103, kWarmUpTag = 104;
constexpr int64_t kHeaderLength = 8;

int64_t elements_of(const at::Tensor& t) {
  return t.defined() ? t.numel() : 0;
}

// How a float64 payload of `elements` travels (the file comment of messages.h).
enum class Route { kNone, kControl, kData, kStore };
Route route_of(int64_t elements, const PayloadStore* store) {
  if (elements == 0) return Route::kNone;
  if (elements < kLargePayloadElements) return Route::kControl;
  if (store != nullptr && elements <= store->slot_elements()) return Route::kStore;
  return Route::kData;
}

// The data group of the messages that `sender` sends: the controller's go down, the workers' up.
Group& data_group(const Links& links, int sender) {
  return sender == 0 ? *links.down : *links.up;
}

at::Tensor header_of(const Message& m, bool f64_in_store) {
  const int64_t f64 = f64_in_store ? -elements_of(m.f64) : elements_of(m.f64);
  return at::tensor(std::vector<int64_t>{static_cast<int64_t>(m.kind), m.agent, m.version, m.count, m.arg1, m.arg2, f64,
                                         elements_of(m.i64)},
                    at::kLong);
}

Status payloads_from(Communicator& comm, const Links& links, int peer, const at::Tensor& header, Message* m) {
  const int64_t* h = header.data_ptr<int64_t>();
  m->kind = static_cast<Kind>(h[0]);
  m->agent = h[1];
  m->version = h[2];
  m->count = h[3];
  m->arg1 = h[4];
  m->arg2 = h[5];
  m->i64 = at::empty({h[7]}, at::kLong);
  const bool pinned = real::pin_host_memory_for(links.device);
  if (h[6] < 0) {
    if (links.store == nullptr)
      return Status::internal("message from rank " + std::to_string(peer) + ": payload in shared memory, but no store");
    CT_RETURN_IF_ERROR(links.store->take(peer, &m->f64, -h[6], pinned));
  } else if (route_of(h[6], nullptr) == Route::kData) {
    // Onto the device when NCCL brings it there; else into host memory, whence the job uploads it.
    Group& data = data_group(links, peer);
    m->f64 = data.nccl ? at::empty({h[6]}, at::TensorOptions().dtype(at::kDouble).device(links.device))
                       : host_buffer({h[6]}, at::kDouble, links.device);
    CT_RETURN_IF_ERROR(comm.recv(data, m->f64, peer, kF64Tag));
  } else {
    m->f64 = at::empty({h[6]}, at::kDouble);
    if (h[6] > 0) CT_RETURN_IF_ERROR(comm.recv(*links.control, m->f64, peer, kF64Tag));
  }
  if (h[7] > 0) CT_RETURN_IF_ERROR(comm.recv(*links.control, m->i64, peer, kI64Tag));
  return Status::ok();
}

// A pool key has 48 bits (memory_pool.h): the sender in the top 16, the pair's sequence in the low 32.
uint64_t payload_key(int sender, uint64_t sequence) {
  return (static_cast<uint64_t>(sender) & 0xffff) << 32 | (sequence & 0xffffffffull);
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kLoad:
      return "load";
    case Kind::kGenerate:
      return "generate";
    case Kind::kGenerated:
      return "generated";
    case Kind::kTrain:
      return "train";
    case Kind::kTrained:
      return "trained";
    case Kind::kStep:
      return "step";
    case Kind::kPublished:
      return "published";
    case Kind::kSwapIn:
      return "swap-in";
    case Kind::kSwapOut:
      return "swap-out";
    case Kind::kState:
      return "state";
    case Kind::kDone:
      return "done";
    case Kind::kStop:
      return "stop";
    case Kind::kStopped:
      return "stopped";
    case Kind::kCheckpoint:
      return "checkpoint";
  }
  return "?";
}

StatusOr<std::unique_ptr<PayloadStore>> PayloadStore::open(Communicator& comm, Group& group, int slots,
                                                           int64_t slot_elements, double timeout_s) {
  std::unique_ptr<PayloadStore> s(new PayloadStore(comm.rank(), slot_elements, timeout_s));
  const std::string base = "/ct_fm_" + std::to_string(comm.env().master_port) + "_in";
  s->inboxes_.resize(static_cast<size_t>(comm.world_size()));
  s->sent_.assign(static_cast<size_t>(comm.world_size()), 0);
  s->taken_.assign(static_cast<size_t>(comm.world_size()), 0);
  auto own = real::SharedPool::create(base + std::to_string(comm.rank()), slots,
                                      static_cast<size_t>(slot_elements) * sizeof(double));
  if (!own.is_ok()) return own.status();
  s->inboxes_[static_cast<size_t>(comm.rank())] = std::move(*own);
  CT_RETURN_IF_ERROR(comm.barrier(group));
  for (int r = 0; r < comm.world_size(); ++r) {
    if (r == comm.rank()) continue;
    auto other = real::SharedPool::open(base + std::to_string(r));
    if (!other.is_ok()) return other.status();
    s->inboxes_[static_cast<size_t>(r)] = std::move(*other);
  }
  CT_RETURN_IF_ERROR(comm.barrier(group));
  return s;
}

Status PayloadStore::put(int peer, const at::Tensor& t) {
  const at::Tensor f = to_host(t).to(at::kDouble).contiguous();
  const uint64_t key = payload_key(rank_, sent_[static_cast<size_t>(peer)]++);
  return inboxes_[static_cast<size_t>(peer)]->put(key, f.data_ptr<double>(), static_cast<size_t>(f.numel()) * 8,
                                                  timeout_s_);
}

Status PayloadStore::take(int peer, at::Tensor* out, int64_t elements, bool pinned) {
  *out = at::empty({elements}, at::TensorOptions().dtype(at::kDouble).pinned_memory(pinned));
  const uint64_t key = payload_key(peer, taken_[static_cast<size_t>(peer)]++);
  return inboxes_[static_cast<size_t>(rank_)]->take(key, out->data_ptr<double>(), static_cast<size_t>(elements) * 8,
                                                    timeout_s_);
}

StatusOr<Links> open_links(Communicator& comm, Group& control, PayloadStore* store, at::Device device) {
  Links links;
  links.control = &control;
  links.store = store;
  links.device = device;
  // Channels 2 and 3: 0 is the control group's (the same group when the data backend is Gloo), 1 the trainers'.
  auto down = comm.world(2);
  if (!down.is_ok()) return down.status();
  auto up = comm.world(3);
  if (!up.is_ok()) return up.status();
  links.down = *down;
  links.up = *up;
  at::Tensor one = at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(device));
  if (comm.rank() == 0) {
    for (int w = 1; w < comm.world_size(); ++w) {
      CT_RETURN_IF_ERROR(comm.send(*links.down, one, w, kWarmUpTag));
      CT_RETURN_IF_ERROR(comm.recv(*links.up, one, w, kWarmUpTag));
    }
  } else {
    CT_RETURN_IF_ERROR(comm.recv(*links.down, one, 0, kWarmUpTag));
    CT_RETURN_IF_ERROR(comm.send(*links.up, one, 0, kWarmUpTag));
  }
  return links;
}

at::Tensor ready_to_send(const Links& links, const at::Tensor& f64) {
  const bool from_device = route_of(elements_of(f64), links.store) == Route::kData && links.up->nccl;
  return from_device ? f64 : to_host(f64);
}

Status send_message(Communicator& comm, const Links& links, int peer, const Message& m) {
  const Route route = route_of(elements_of(m.f64), links.store);
  if (route == Route::kStore) CT_RETURN_IF_ERROR(links.store->put(peer, m.f64));
  at::Tensor header = header_of(m, route == Route::kStore);
  CT_RETURN_IF_ERROR(comm.send(*links.control, header, peer, kHeaderTag));
  if (route == Route::kControl || route == Route::kData) {
    at::Tensor f = m.f64.to(at::kDouble).contiguous();
    Group& group = route == Route::kData ? data_group(links, comm.rank()) : *links.control;
    CT_RETURN_IF_ERROR(comm.send(group, f, peer, kF64Tag));
  }
  if (elements_of(m.i64) > 0) {
    at::Tensor i = m.i64.to(at::kLong).contiguous();
    CT_RETURN_IF_ERROR(comm.send(*links.control, i, peer, kI64Tag));
  }
  return Status::ok();
}

Status recv_message(Communicator& comm, const Links& links, int peer, Message* m) {
  at::Tensor header = at::empty({kHeaderLength}, at::kLong);
  CT_RETURN_IF_ERROR(comm.recv(*links.control, header, peer, kHeaderTag));
  return payloads_from(comm, links, peer, header, m);
}

StatusOr<int> recv_any_message(Communicator& comm, const Links& links, Message* m) {
  at::Tensor header = at::empty({kHeaderLength}, at::kLong);
  auto index = comm.recv_any(*links.control, header, kHeaderTag);
  if (!index.is_ok()) return index.status();
  const int peer = links.control->members[static_cast<size_t>(*index)];
  CT_RETURN_IF_ERROR(payloads_from(comm, links, peer, header, m));
  return peer;
}

Status Outbox::start(Group& group, int peer, at::Tensor t, int tag) {
  auto send = comm_.send_async(group, t, peer, tag);
  if (!send.is_ok()) return send.status();
  pending_.push_back({*send, std::move(t)});
  return Status::ok();
}

Status Outbox::post(int peer, const Message& m) {
  const Route route = route_of(elements_of(m.f64), links_.store);
  if (route == Route::kStore) CT_RETURN_IF_ERROR(links_.store->put(peer, m.f64));
  CT_RETURN_IF_ERROR(start(*links_.control, peer, header_of(m, route == Route::kStore), kHeaderTag));
  if (route == Route::kControl || route == Route::kData) {
    Group& group = route == Route::kData ? data_group(links_, comm_.rank()) : *links_.control;
    CT_RETURN_IF_ERROR(start(group, peer, m.f64.to(at::kDouble).contiguous().clone(), kF64Tag));
  }
  if (elements_of(m.i64) > 0)
    CT_RETURN_IF_ERROR(start(*links_.control, peer, m.i64.to(at::kLong).contiguous().clone(), kI64Tag));
  return Status::ok();
}

void Outbox::reap() {
  while (!pending_.empty() && pending_.front().send.work->isCompleted())
    pending_.pop_front();
}

Status Outbox::flush() {
  while (!pending_.empty()) {
    CT_RETURN_IF_ERROR(comm_.wait_send(pending_.front().send));
    pending_.pop_front();
  }
  return Status::ok();
}

}  // namespace clustertwin::real::flexmarl
