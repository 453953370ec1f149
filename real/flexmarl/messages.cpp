#include "real/flexmarl/messages.h"

#include <vector>

namespace clustertwin::real::flexmarl {
namespace {

constexpr int kHeaderTag = 101, kF64Tag = 102, kI64Tag = 103;
constexpr int64_t kHeaderLength = 8;

int64_t elements_of(const at::Tensor& t) {
  return t.defined() ? t.numel() : 0;
}

// Whether `m`'s float64 payload goes through the store.
bool via_store(const Message& m, const PayloadStore* store) {
  return store != nullptr && elements_of(m.f64) >= kShmPayloadElements && elements_of(m.f64) <= store->slot_elements();
}

at::Tensor header_of(const Message& m, bool f64_in_store) {
  const int64_t f64 = f64_in_store ? -elements_of(m.f64) : elements_of(m.f64);
  return at::tensor(std::vector<int64_t>{static_cast<int64_t>(m.kind), m.agent, m.version, m.count, m.arg1, m.arg2, f64,
                                         elements_of(m.i64)},
                    at::kLong);
}

Status payloads_from(Communicator& comm, Group& world, int peer, const at::Tensor& header, Message* m,
                     PayloadStore* store) {
  const int64_t* h = header.data_ptr<int64_t>();
  m->kind = static_cast<Kind>(h[0]);
  m->agent = h[1];
  m->version = h[2];
  m->count = h[3];
  m->arg1 = h[4];
  m->arg2 = h[5];
  m->i64 = at::empty({h[7]}, at::kLong);
  if (h[6] < 0) {
    if (store == nullptr)
      return Status::internal("message from rank " + std::to_string(peer) + ": payload in shared memory, but no store");
    CT_RETURN_IF_ERROR(store->take(peer, &m->f64, -h[6]));
  } else {
    m->f64 = at::empty({h[6]}, at::kDouble);
    if (h[6] > 0) CT_RETURN_IF_ERROR(comm.recv(world, m->f64, peer, kF64Tag));
  }
  if (h[7] > 0) CT_RETURN_IF_ERROR(comm.recv(world, m->i64, peer, kI64Tag));
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
  }
  return "?";
}

StatusOr<std::unique_ptr<PayloadStore>> PayloadStore::open(Communicator& comm, Group& world, int slots,
                                                           int64_t slot_elements, double timeout_s) {
  std::unique_ptr<PayloadStore> s(new PayloadStore(comm.rank(), slot_elements, timeout_s));
  const std::string base = "/ct_fm_" + std::to_string(comm.env().master_port) + "_in";
  s->inboxes_.resize(static_cast<size_t>(comm.world_size()));
  s->sent_.assign(static_cast<size_t>(comm.world_size()), 0);
  s->taken_.assign(static_cast<size_t>(comm.world_size()), 0);
  auto own = real::flowtrain::SharedPool::create(base + std::to_string(comm.rank()), slots,
                                                 static_cast<size_t>(slot_elements) * sizeof(double));
  if (!own.is_ok()) return own.status();
  s->inboxes_[static_cast<size_t>(comm.rank())] = std::move(*own);
  CT_RETURN_IF_ERROR(comm.barrier(world));
  for (int r = 0; r < comm.world_size(); ++r) {
    if (r == comm.rank()) continue;
    auto other = real::flowtrain::SharedPool::open(base + std::to_string(r));
    if (!other.is_ok()) return other.status();
    s->inboxes_[static_cast<size_t>(r)] = std::move(*other);
  }
  CT_RETURN_IF_ERROR(comm.barrier(world));
  return s;
}

Status PayloadStore::put(int peer, const at::Tensor& t) {
  const at::Tensor f = t.to(at::kDouble).contiguous();
  const uint64_t key = payload_key(rank_, sent_[static_cast<size_t>(peer)]++);
  return inboxes_[static_cast<size_t>(peer)]->put(key, f.data_ptr<double>(), static_cast<size_t>(f.numel()) * 8,
                                                  timeout_s_);
}

Status PayloadStore::take(int peer, at::Tensor* out, int64_t elements) {
  *out = at::empty({elements}, at::kDouble);
  const uint64_t key = payload_key(peer, taken_[static_cast<size_t>(peer)]++);
  return inboxes_[static_cast<size_t>(rank_)]->take(key, out->data_ptr<double>(), static_cast<size_t>(elements) * 8,
                                                    timeout_s_);
}

Status send_message(Communicator& comm, Group& world, int peer, const Message& m, PayloadStore* store) {
  const bool shm = via_store(m, store);
  if (shm) CT_RETURN_IF_ERROR(store->put(peer, m.f64));
  at::Tensor header = header_of(m, shm);
  CT_RETURN_IF_ERROR(comm.send(world, header, peer, kHeaderTag));
  if (!shm && elements_of(m.f64) > 0) {
    at::Tensor f = m.f64.to(at::kDouble).contiguous();
    CT_RETURN_IF_ERROR(comm.send(world, f, peer, kF64Tag));
  }
  if (elements_of(m.i64) > 0) {
    at::Tensor i = m.i64.to(at::kLong).contiguous();
    CT_RETURN_IF_ERROR(comm.send(world, i, peer, kI64Tag));
  }
  return Status::ok();
}

Status recv_message(Communicator& comm, Group& world, int peer, Message* m, PayloadStore* store) {
  at::Tensor header = at::empty({kHeaderLength}, at::kLong);
  CT_RETURN_IF_ERROR(comm.recv(world, header, peer, kHeaderTag));
  return payloads_from(comm, world, peer, header, m, store);
}

StatusOr<int> recv_any_message(Communicator& comm, Group& world, Message* m, PayloadStore* store) {
  at::Tensor header = at::empty({kHeaderLength}, at::kLong);
  auto peer = comm.recv_any(world, header, kHeaderTag);
  if (!peer.is_ok()) return peer.status();
  CT_RETURN_IF_ERROR(payloads_from(comm, world, *peer, header, m, store));
  return *peer;
}

Status Outbox::start(int peer, at::Tensor t, int tag) {
  auto work = comm_.send_async(world_, t, peer, tag);
  if (!work.is_ok()) return work.status();
  pending_.push_back({*work, std::move(t)});
  return Status::ok();
}

Status Outbox::post(int peer, const Message& m) {
  const bool shm = via_store(m, store_);
  if (shm) CT_RETURN_IF_ERROR(store_->put(peer, m.f64));
  CT_RETURN_IF_ERROR(start(peer, header_of(m, shm), kHeaderTag));
  if (!shm && elements_of(m.f64) > 0)
    CT_RETURN_IF_ERROR(start(peer, m.f64.to(at::kDouble).contiguous().clone(), kF64Tag));
  if (elements_of(m.i64) > 0) CT_RETURN_IF_ERROR(start(peer, m.i64.to(at::kLong).contiguous().clone(), kI64Tag));
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
