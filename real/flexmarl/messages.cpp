#include "real/flexmarl/messages.h"

#include <vector>

namespace clustertwin::real::flexmarl {
namespace {

constexpr int kHeaderTag = 101, kF64Tag = 102, kI64Tag = 103;
constexpr int64_t kHeaderLength = 8;

int64_t elements_of(const at::Tensor& t) {
  return t.defined() ? t.numel() : 0;
}

at::Tensor header_of(const Message& m) {
  return at::tensor(std::vector<int64_t>{static_cast<int64_t>(m.kind), m.agent, m.version, m.count, m.arg1, m.arg2,
                                         elements_of(m.f64), elements_of(m.i64)},
                    at::kLong);
}

Status payloads_from(Communicator& comm, Group& world, int peer, const at::Tensor& header, Message* m) {
  const int64_t* h = header.data_ptr<int64_t>();
  m->kind = static_cast<Kind>(h[0]);
  m->agent = h[1];
  m->version = h[2];
  m->count = h[3];
  m->arg1 = h[4];
  m->arg2 = h[5];
  m->f64 = at::empty({h[6]}, at::kDouble);
  m->i64 = at::empty({h[7]}, at::kLong);
  if (h[6] > 0) CT_RETURN_IF_ERROR(comm.recv(world, m->f64, peer, kF64Tag));
  if (h[7] > 0) CT_RETURN_IF_ERROR(comm.recv(world, m->i64, peer, kI64Tag));
  return Status::ok();
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

Status send_message(Communicator& comm, Group& world, int peer, const Message& m) {
  at::Tensor header = header_of(m);
  CT_RETURN_IF_ERROR(comm.send(world, header, peer, kHeaderTag));
  if (elements_of(m.f64) > 0) {
    at::Tensor f = m.f64.to(at::kDouble).contiguous();
    CT_RETURN_IF_ERROR(comm.send(world, f, peer, kF64Tag));
  }
  if (elements_of(m.i64) > 0) {
    at::Tensor i = m.i64.to(at::kLong).contiguous();
    CT_RETURN_IF_ERROR(comm.send(world, i, peer, kI64Tag));
  }
  return Status::ok();
}

Status recv_message(Communicator& comm, Group& world, int peer, Message* m) {
  at::Tensor header = at::empty({kHeaderLength}, at::kLong);
  CT_RETURN_IF_ERROR(comm.recv(world, header, peer, kHeaderTag));
  return payloads_from(comm, world, peer, header, m);
}

StatusOr<int> recv_any_message(Communicator& comm, Group& world, Message* m) {
  at::Tensor header = at::empty({kHeaderLength}, at::kLong);
  auto peer = comm.recv_any(world, header, kHeaderTag);
  if (!peer.is_ok()) return peer.status();
  CT_RETURN_IF_ERROR(payloads_from(comm, world, *peer, header, m));
  return *peer;
}

Status Outbox::start(int peer, at::Tensor t, int tag) {
  auto work = comm_.send_async(world_, t, peer, tag);
  if (!work.is_ok()) return work.status();
  pending_.push_back({*work, std::move(t)});
  return Status::ok();
}

Status Outbox::post(int peer, const Message& m) {
  CT_RETURN_IF_ERROR(start(peer, header_of(m), kHeaderTag));
  if (elements_of(m.f64) > 0) CT_RETURN_IF_ERROR(start(peer, m.f64.to(at::kDouble).contiguous().clone(), kF64Tag));
  if (elements_of(m.i64) > 0) CT_RETURN_IF_ERROR(start(peer, m.i64.to(at::kLong).contiguous().clone(), kI64Tag));
  return Status::ok();
}

void Outbox::reap() {
  while (!pending_.empty() && pending_.front().work->isCompleted())
    pending_.pop_front();
}

Status Outbox::flush() {
  while (!pending_.empty()) {
    CT_RETURN_IF_ERROR(comm_.wait_send(pending_.front().work));
    pending_.pop_front();
  }
  return Status::ok();
}

}  // namespace clustertwin::real::flexmarl
