#pragma once

// FlexMARL's hierarchical load balancing of the rollout pool
// (../shared/papers/flexmarl.md), as a policy both executors run:
//
//   intra-agent   a request goes to its agent's least-loaded instance (load =
//                 requests queued + running; ties to the lowest id); when one
//                 instance's queue exceeds a sibling's load by more than the
//                 gap threshold, queued requests move to the sibling
//   inter-agent   when the busiest agent's load per instance exceeds the
//                 idlest agent's by more than the threshold, one instance
//                 (an idle one of the idlest agent that has one to spare) is
//                 reassigned to the busiest agent. With `keep_one` (the
//                 default) every agent keeps an instance; without it an agent
//                 with no requests may give up its last, and requests of an
//                 agent with no instance wait unplaced (an infinite load per
//                 instance) until the next reassignment gives it one
//
// The paper gives the trigger (a load gap of 5 requests) but not the rules
// that act on it: those above are our reconstruction. An instance that
// changes agent must load the other agent's weights; the caller charges that.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::models::flexmarl {

struct Instance {
  int id = 0;
  int agent = 0;    // index into the agents
  int queued = 0;   // waiting requests
  int running = 0;  // requests being decoded
  int load() const { return queued + running; }
};

/// A reassignment of `instance` from agent `from` to agent `to`.
struct Reassignment {
  int instance = 0, from = 0, to = 0;
};

/// Queued requests moved between two instances of one agent.
struct Migration {
  int from_instance = 0, to_instance = 0, requests = 0;
};

class LoadBalancer {
 public:
  /// `instances_per_agent[a]` instances for agent a, numbered agent by agent.
  /// `devices_per_instance[a]` (empty: all equal) keeps inter-agent moves
  /// between agents whose instances have the same size (a 14B engine's
  /// device cannot serve a 32B agent). InvalidArgument for an agent with no
  /// instance, a size list of the wrong length, or a gap threshold <= 0
  /// (with 0 every request would rebalance).
  static StatusOr<LoadBalancer> create(const std::vector<int>& instances_per_agent, double gap_threshold,
                                       const std::vector<int>& devices_per_instance = {}, bool keep_one = true);

  /// The instance that takes a new request of `agent` (queued there); -1
  /// when the agent has no instance: the request waits unplaced.
  int dispatch(int agent);
  /// Requests of `agent` waiting for an instance.
  int unplaced(int agent) const { return unplaced_.at(static_cast<size_t>(agent)); }
  /// Places one of the agent's unplaced requests (which must exist, and the
  /// agent must have an instance now): the instance that takes it.
  int place_unplaced(int agent);
  /// A queued request of `instance` starts decoding.
  void start(int instance);
  /// A running request of `instance` finishes.
  void finish(int instance);

  /// Intra-agent: moves queued requests from an agent's busiest instance to
  /// its idlest while their loads differ by more than the threshold (half the
  /// difference each time); the moves made.
  std::vector<Migration> balance_within_agents();
  /// Inter-agent: at most one reassignment per call, when the gap in load
  /// per instance between the busiest agent and the idlest agent of the same
  /// instance size exceeds the threshold and the idlest has an idle instance
  /// to spare.
  std::optional<Reassignment> balance_across_agents();

  /// Gives an idle instance to `agent` (the orchestrator's plan at a step's
  /// start); false, and no change, when the instance has requests.
  bool assign(int instance, int agent);

  const std::vector<Instance>& instances() const { return instances_; }
  int instance_count(int agent) const;
  /// Requests queued and running on the agent's instances, per instance
  /// (unplaced requests with no instance: infinite; no requests and no
  /// instance: 0).
  double load_per_instance(int agent) const;
  int agents() const { return agents_; }

 private:
  LoadBalancer(int agents, double threshold) : agents_(agents), threshold_(threshold) {}

  int agents_ = 0;
  double threshold_ = 5;
  bool keep_one_ = true;
  std::vector<int> sizes_;     // devices per instance, per agent
  std::vector<int> unplaced_;  // per agent: requests waiting for an instance
  std::vector<Instance> instances_;
};

}  // namespace clustertwin::models::flexmarl
