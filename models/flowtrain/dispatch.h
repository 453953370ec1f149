#pragma once

// Which packed micro-batch each backbone replica trains next, and which image
// sample each encoder encodes next: the decisions FlowTrain's two executors
// take, each as one object with two policies.
//
// MicroBatchDispatch:
//   round-robin  replica k trains micro-batches k, k + B, k + 2B, ... in that
//                order, waiting for each one's embeddings (run flowtrain,
//                real/flowtrain: fixed before the step, so the processes
//                need no coordination beyond the pool)
//   first-ready  a free replica takes the first micro-batch no replica has
//                taken whose embeddings are all in the pool (the cluster
//                twin, sim/flowtrain: the paper's pool-driven flow, where a
//                fast replica takes more)
//
// EncoderDispatch, over the step's image samples in micro-batch order:
//
//   round-robin   sample q to encoder q mod E, each encoder in order (the real
//                 executor)
//   shared queue  any free encoder takes the queue's head (the twin, which also
//                 decides when an encoder runs a backward instead)
//
// Both executors pack the step the same way (models/flowtrain/packing.h, by
// cost, image-heavy micro-batches first). Plain C++.

#include <functional>
#include <vector>

namespace clustertwin::models::flowtrain {

class MicroBatchDispatch {
 public:
  enum class Policy { kRoundRobin, kFirstReady };
  static constexpr int kWait = -1;  // nothing for this replica now: ask again when a micro-batch becomes ready
  static constexpr int kDone = -2;  // nothing left for this replica this step

  /// `micro_batches` of the step, `replicas` backbone replicas (both >= 1).
  MicroBatchDispatch(Policy policy, int micro_batches, int replicas);

  Policy policy() const { return policy_; }
  /// The micro-batch `replica` trains next, marked taken; `ready(b)`: all of
  /// micro-batch b's embeddings are in the pool. Round-robin ignores
  /// readiness (the replica waits on the pool), first-ready waits for it.
  int take(int replica, const std::function<bool(int)>& ready);
  /// Micro-batches no replica has taken whose embeddings are ready.
  int ready_untaken(const std::function<bool(int)>& ready) const;
  bool taken(int micro_batch) const { return taken_[static_cast<size_t>(micro_batch)]; }

 private:
  Policy policy_;
  int replicas_;
  std::vector<bool> taken_;
  std::vector<int> next_of_;  // round-robin: each replica's next micro-batch
};

class EncoderDispatch {
 public:
  enum class Policy { kRoundRobin, kSharedQueue };
  static constexpr int kNone = -1;  // nothing left for this encoder

  /// `order`: the step's image samples in micro-batch order; `encoders` >= 1.
  EncoderDispatch(Policy policy, std::vector<int> order, int encoders);

  /// The sample `encoder` encodes next, kNone when none is left for it.
  int peek(int encoder) const;
  /// The same sample, taken.
  int take(int encoder);
  /// Samples not taken yet, by any encoder.
  int left() const { return left_; }

 private:
  Policy policy_;
  std::vector<int> order_;
  int encoders_;
  int left_;
  std::vector<size_t> next_of_;  // round-robin: each encoder's next index into order_; shared: next_of_[0]
};

}  // namespace clustertwin::models::flowtrain
