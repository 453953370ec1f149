#pragma once

// The controller-worker protocol of `run flexmarl`: a message is a header of
// eight int64 (kind, agent, version, count, two arguments, the payload
// sizes) and up to two payloads, one float64 and one int64 tensor, sent
// point to point.
//
//   header, int64 payload, small float64 payload    the control group (Gloo, every rank, host memory)
//   float64 payload of kLargePayloadElements or more (weights, trainer state)
//       all ranks on one machine                     shared memory (a PayloadStore), header only on the wire
//       else                                         a data group (the data backend: NCCL, or Gloo staging
//                                                    GPU tensors through host memory), one per direction
//
// The control group is Gloo whatever the data backend: the controller
// receives from whichever worker answers first, which NCCL cannot do. The
// data groups go one per direction (`down` from the controller, `up` to it)
// because NCCL runs a pair's sends and receives on one stream in issue
// order: a controller's receive queued behind its send to a worker that is
// itself sending would wait for ever.
//
// The controller never blocks on a send (a send completes only once the
// peer posts its receive, and a worker may at that moment be sending to the
// controller): its sends are started and kept in an Outbox until done.
// Workers send their replies and wait; the controller always comes back to
// receive.
//
// With a PayloadStore, the sender copies a large float64 payload into a slot
// of the receiver's inbox (a SharedPool, real/core/shared_pool.h) under
// (sender, sequence) and sends only the header, whose f64 size is then
// negative; the receiver takes the slot. Gloo over loopback moves ~200 MB/s
// and a publish or a state swap is 1-4 MB, so this is what a job's hand-off
// costs.
//
// Where payloads land: int64 and small float64 payloads in host memory (they
// are host data: prompts, responses, log-probabilities); a large float64
// payload on Links::device when an NCCL data group brings it, else in host
// memory (pinned when Links::device is a GPU, so that the job's upload runs
// asynchronously). A payload may be sent from anywhere: the store and Gloo
// copy a GPU tensor to the host, NCCL a host tensor to the device.

#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "real/core/communicator.h"
#include "real/core/shared_pool.h"

namespace clustertwin::real::flexmarl {

enum class Kind : int64_t {
  kLoad = 1,    // controller -> worker: an agent's published weights (f64)
  kGenerate,    // -> worker: rollout requests (i64); reply kGenerated
  kGenerated,   // <- worker: responses (i64) and behaviour log-probabilities (f64)
  kTrain,       // -> worker: a micro-batch (i64 tokens, f64 advantages and log-probabilities); reply kTrained
  kTrained,     // <- worker: the micro-batch's loss (f64)
  kStep,        // -> worker: the optimizer step over the workers in arg1 (a bit mask), count 1: send the state
                //    back too; reply kPublished or kDone
  kPublished,   // <- the step's lowest worker: the new weights (f64)
  kSwapIn,      // -> worker: an agent's trainer state (f64); reply kDone
  kSwapOut,     // -> worker: give the agent's trainer state back; reply kState
  kState,       // <- worker: the trainer state (f64)
  kDone,        // <- worker: a job without a result finished
  kStop,        // -> worker: leave the loop; reply kStopped
  kStopped,     // <- worker: its jobs' CPU seconds, wall seconds, swap seconds and swapped bytes (f64)
  kCheckpoint,  // -> worker, between steps: write your part of the checkpoint of step arg2 (no reply: the write
                //    is collective over the control group)
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

/// Float64 payloads of at least this many elements (64 KiB) are large: the PayloadStore's, or a data group's.
inline constexpr int64_t kLargePayloadElements = 8192;

/// Every rank's shared-memory inbox for large payloads (see above).
class PayloadStore {
 public:
  /// Collective over `group` (every rank): each rank creates its inbox of `slots` slots of
  /// `slot_elements` float64, then opens every other rank's.
  static StatusOr<std::unique_ptr<PayloadStore>> open(Communicator& comm, Group& group, int slots,
                                                      int64_t slot_elements, double timeout_s);
  /// Copies `t` (on any device) into `peer`'s inbox.
  Status put(int peer, const at::Tensor& t);
  /// Takes the next payload `peer` put into this rank's inbox: [elements] float64 in host memory, pinned when
  /// `pinned`.
  Status take(int peer, at::Tensor* out, int64_t elements, bool pinned = false);
  int64_t slot_elements() const { return slot_elements_; }

 private:
  PayloadStore(int rank, int64_t slot_elements, double timeout_s)
      : rank_(rank), slot_elements_(slot_elements), timeout_s_(timeout_s) {}
  int rank_;
  int64_t slot_elements_;
  double timeout_s_;
  std::vector<std::unique_ptr<real::SharedPool>> inboxes_;  // by rank; this rank's is its own
  std::vector<uint64_t> sent_, taken_;                      // per peer: the payload sequence
};

/// What a rank's messages travel by (see the file comment).
struct Links {
  Group* control = nullptr;       // Gloo, every rank
  Group* down = nullptr;          // the data backend, every rank: large payloads from the controller
  Group* up = nullptr;            // the data backend, every rank: large payloads to the controller
  PayloadStore* store = nullptr;  // large payloads through shared memory (all ranks on one machine)
  /// Where this rank wants large payloads: a worker's device; the controller's host.
  at::Device device = at::kCPU;
};

/// The control group, then the two data groups of every rank, each pair of
/// the controller and a worker exchanging one value on both, so that NCCL's
/// communicators exist before the protocol starts (NCCL creates a pair's on
/// its first send, which blocks until the peer joins; inside the protocol a
/// worker could then be blocked sending to the controller). Collective.
/// `control` was made with comm.control_group(every rank, its channel).
StatusOr<Links> open_links(Communicator& comm, Group& control, PayloadStore* store, at::Device device);

/// `f64` where its route sends it from, ready to go: in host memory (copied
/// from a GPU into pinned memory and waited for) unless an NCCL data group
/// takes it from the device. A worker's job calls this so that the copy off
/// the device counts in the job's time, not in the send's.
at::Tensor ready_to_send(const Links& links, const at::Tensor& f64);

/// Sends and waits (workers).
Status send_message(Communicator& comm, const Links& links, int peer, const Message& m);
/// The next message from `peer` (workers: from the controller).
Status recv_message(Communicator& comm, const Links& links, int peer, Message* m);
/// The next message from any peer; its sender's rank.
StatusOr<int> recv_any_message(Communicator& comm, const Links& links, Message* m);

/// The controller's sends in flight, with their tensors kept alive.
class Outbox {
 public:
  Outbox(Communicator& comm, const Links& links) : comm_(comm), links_(links) {}
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
  Status start(Group& group, int peer, at::Tensor t, int tag);

  Communicator& comm_;
  const Links& links_;
  std::deque<Pending> pending_;
};

}  // namespace clustertwin::real::flexmarl
