#pragma once

// Which packed micro-batch each backbone replica trains next: the decision
// FlowTrain's two executors take, as one object with two policies.
//
//   round-robin  replica k trains micro-batches k, k + B, k + 2B, ... in that
//                order, waiting for each one's embeddings (run flowtrain,
//                real/flowtrain: fixed before the step, so the processes
//                need no coordination beyond the pool)
//   first-ready  a free replica takes the first micro-batch no replica has
//                taken whose embeddings are all in the pool (the cluster
//                twin, sim/flowtrain: the paper's pool-driven flow, where a
//                fast replica takes more)
//
// Both executors pack the step the same way (models/flowtrain/packing.h, by
// cost, image-heavy micro-batches first) and feed the encoders in micro-batch
// order; they differ in this choice only. Plain C++.

#include <functional>
#include <vector>

namespace clustertwin::flowtrain {

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

}  // namespace clustertwin::flowtrain
