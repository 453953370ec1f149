#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"

namespace clustertwin::sim {

/// One message of a collective: `bytes` from rank `src` to rank `dst`.
struct Message {
  int src = 0;
  int dst = 0;
  double bytes = 0;
};

/// Every member sends `bytes_to[j]` to every other member j (by index in
/// `members`): an all-to-all exchange in compact form. An all-to-all of 1,536
/// ranks is 2.4 million messages; kept compact, the flow fidelity merges it
/// per node pair without ever listing them.
struct Exchange {
  std::vector<int> members;
  std::vector<double> bytes_to;
  size_t message_count() const { return members.size() * (members.size() - (members.empty() ? 0 : 1)); }
};

/// Messages that start together; a round ends when its last message arrives.
struct Round {
  std::vector<Message> messages;
  std::vector<Exchange> exchanges;

  /// Calls fn(message) for every message of the round, the exchanges' included.
  template <class Fn>
  void for_each_message(Fn&& fn) const {
    for (const Message& m : messages)
      fn(m);
    for (const Exchange& x : exchanges) {
      for (size_t i = 0; i < x.members.size(); ++i) {
        for (size_t j = 0; j < x.members.size(); ++j) {
          if (i != j) fn(Message{x.members[i], x.members[j], x.bytes_to[j]});
        }
      }
    }
  }
  size_t message_count() const {
    size_t count = messages.size();
    for (const Exchange& x : exchanges)
      count += x.message_count();
    return count;
  }
};

/// `repeats` consecutive rounds with one communication pattern (the same
/// messages each time). The `flow` fidelity simulates a phase as one set of
/// aggregate flows instead of round after round (see collective_runner.h).
struct Phase {
  Round round;
  int repeats = 1;
};

/// The messages of one collective, by algorithm: the `step` fidelity of the
/// twin sends exactly these.
///
/// Ring all-reduce of S bytes over n ranks, for example, is one phase of
/// 2(n-1) repeats of a round in which rank i sends S/n to rank i+1
/// (reduce-scatter then all-gather): on a uniform switch it takes
/// 2(n-1)(alpha + S/(n beta)).
struct CollectiveSchedule {
  std::vector<Phase> phases;
  /// Total bytes over all messages.
  double total_bytes() const;
  size_t message_count() const;
};

/// Builds the schedule of `collective` moving `bytes` (nccl-tests
/// convention, models/plan/plan.h) among `members` (ranks, ascending).
/// `node_of` maps a rank to its node, for the hierarchical algorithms.
/// InvalidArgument names the task when the algorithm does not apply (for
/// example halving-doubling on a group that is not a power of two).
StatusOr<CollectiveSchedule> build_schedule(const models::Collective& collective, int64_t bytes,
                                            const std::vector<int>& members, const std::function<int(int)>& node_of,
                                            const std::string& task_name);

/// The algorithm kAuto resolves to for `op` (ring for the reductions and
/// gathers, direct for all-to-all and send/recv, tree for broadcast).
models::Algorithm resolve_algorithm(models::CollectiveOp op, models::Algorithm algorithm);

}  // namespace clustertwin::sim
