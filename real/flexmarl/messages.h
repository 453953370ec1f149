#pragma once

// The controller-worker protocol of `run flexmarl`: a message is a header of
// eight int64 (kind, agent, version, count, two arguments, the payload
// sizes) and up to two payloads, one float64 and one int64 tensor, sent
// point to point over the world group.
//
// The controller never blocks on a send (a Gloo send completes only once the
// peer posts its receive, and a worker may at that moment be sending to the
// controller): its sends are started and kept in an Outbox until done.
// Workers send their replies and wait; the controller always comes back to
// receive.
//
// With a PayloadStore (all ranks on one machine), a float64 payload of
// kShmPayloadElements or more goes through shared memory instead of Gloo:
// the sender copies it into a slot of the receiver's inbox (a SharedPool,
// real/flowtrain/memory_pool.h) under (sender, sequence) and sends only the
// header, whose f64 size is then negative; the receiver takes the slot. Gloo
// over loopback moves ~200 MB/s and a publish or a state swap is 1-4 MB, so
// this is what a job's hand-off costs.

#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/common/status.h"
#include "real/core/communicator.h"
#include "real/flowtrain/memory_pool.h"

namespace clustertwin::real::flexmarl {

enum class Kind : int64_t {
  kLoad = 1,   // controller -> worker: an agent's published weights (f64)
  kGenerate,   // -> worker: rollout requests (i64); reply kGenerated
  kGenerated,  // <- worker: responses (i64) and behaviour log-probabilities (f64)
  kTrain,      // -> worker: a micro-batch (i64 tokens, f64 advantages and log-probabilities); reply kTrained
  kTrained,    // <- worker: the micro-batch's loss (f64)
  kStep,       // -> worker: the optimizer step over the workers in arg1 (a bit mask), count 1: send the state
               //    back too; reply kPublished or kDone
  kPublished,  // <- the step's lowest worker: the new weights (f64)
  kSwapIn,     // -> worker: an agent's trainer state (f64); reply kDone
  kSwapOut,    // -> worker: give the agent's trainer state back; reply kState
  kState,      // <- worker: the trainer state (f64)
  kDone,       // <- worker: a job without a result finished
  kStop,       // -> worker: leave the loop; reply kStopped
  kStopped,    // <- worker: the CPU seconds its jobs took (f64)
};
const char* kind_name(Kind kind);

struct Message {
  Kind kind = Kind::kDone;
  int64_t agent = 0;
  int64_t version = 0;
  int64_t count = 0;
  int64_t arg1 = 0;
  int64_t arg2 = 0;
  at::Tensor f64;  // undefined or empty: none
  at::Tensor i64;
};

/// Float64 payloads of at least this many elements (64 KiB) use the PayloadStore when there is one.
inline constexpr int64_t kShmPayloadElements = 8192;

/// Every rank's shared-memory inbox for large payloads (see above).
class PayloadStore {
 public:
  /// Collective over `world`: each rank creates its inbox of `slots` slots of
  /// `slot_elements` float64, then opens every other rank's.
  static StatusOr<std::unique_ptr<PayloadStore>> open(Communicator& comm, Group& world, int slots,
                                                      int64_t slot_elements, double timeout_s);
  /// Copies `t` into `peer`'s inbox; the key the receiver takes it by.
  Status put(int peer, const at::Tensor& t);
  /// Takes the next payload `peer` put into this rank's inbox ([elements] float64).
  Status take(int peer, at::Tensor* out, int64_t elements);
  int64_t slot_elements() const { return slot_elements_; }

 private:
  PayloadStore(int rank, int64_t slot_elements, double timeout_s)
      : rank_(rank), slot_elements_(slot_elements), timeout_s_(timeout_s) {}
  int rank_;
  int64_t slot_elements_;
  double timeout_s_;
  std::vector<std::unique_ptr<real::flowtrain::SharedPool>> inboxes_;  // by rank; this rank's is its own
  std::vector<uint64_t> sent_, taken_;                                 // per peer: the payload sequence
};

/// Sends and waits (workers).
Status send_message(Communicator& comm, Group& world, int peer, const Message& m, PayloadStore* store = nullptr);
/// The next message from `peer` (workers: from the controller).
Status recv_message(Communicator& comm, Group& world, int peer, Message* m, PayloadStore* store = nullptr);
/// The next message from any peer; its sender's index.
StatusOr<int> recv_any_message(Communicator& comm, Group& world, Message* m, PayloadStore* store = nullptr);

/// The controller's sends in flight, with their tensors kept alive.
class Outbox {
 public:
  Outbox(Communicator& comm, Group& world, PayloadStore* store = nullptr) : comm_(comm), world_(world), store_(store) {}
  /// Starts sending `m` to `peer`.
  Status post(int peer, const Message& m);
  /// Forgets the sends that completed.
  void reap();
  /// Waits for every send.
  Status flush();

 private:
  struct Pending {
    PendingSend send;
    at::Tensor tensor;
  };
  Status start(int peer, at::Tensor t, int tag);

  Communicator& comm_;
  Group& world_;
  PayloadStore* store_;
  std::deque<Pending> pending_;
};

}  // namespace clustertwin::real::flexmarl
