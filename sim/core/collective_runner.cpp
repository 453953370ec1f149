#include "sim/core/collective_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <simgrid/s4u.hpp>
#include <unordered_map>

#include "sim/core/actor_pool.h"
#include "sim/core/link_tally.h"
#include "sim/core/platform.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;

// One simulated transfer. It starts `delay` seconds after the phase does.
struct Flow {
  sg::Host* from;
  sg::Host* to;
  double bytes;
  double delay;
};

// Sends every flow and returns when all have arrived.
//
// Flows go through mailboxes, one per flow, with an actor per host that
// sends or receives (from the platform's pool of parked actors): SimGrid
// 3.32's Comm::sendto_async keeps all pending host-to-host comms in one list
// and removes each finished comm by a linear search, which makes an
// all-to-all of 10,000 flows quadratic (measured: 0.4 s per all-to-all of 96
// nodes; 0.09 s through mailboxes), whichever actors issue them.
void send_all(Platform& platform, const std::vector<Flow>& flows) {
  static int token = 0;  // mailboxes need a payload; only the simulated size matters
  // One actor per host that sends or receives (not one per side): at 16,384
  // workers a ring's 32,768 actors, each a stack and a guard page, ran past
  // the kernel's limit of 65,530 memory mappings per process.
  struct HostFlows {
    sg::Host* host;
    std::vector<std::tuple<double, sg::Mailbox*, uint64_t>> sends;  // delay, mailbox, bytes
    std::vector<sg::Mailbox*> receives;
  };
  // Grouped in flow order, so that actors start in the same order every run.
  std::vector<HostFlows> hosts;
  std::unordered_map<sg::Host*, size_t> index;
  std::vector<sg::Mailbox*> used;
  used.reserve(flows.size());
  LinkTally* tally = platform.link_tally();
  auto of = [&](sg::Host* host) -> HostFlows& {
    auto [it, added] = index.try_emplace(host, hosts.size());
    if (added) hosts.push_back({host, {}, {}});
    return hosts[it->second];
  };
  for (const Flow& f : flows) {
    if (tally != nullptr) tally->add(f.from, f.to, f.bytes);
    sg::Mailbox* mailbox = platform.take_mailbox();
    used.push_back(mailbox);
    of(f.from).sends.emplace_back(f.delay, mailbox, static_cast<uint64_t>(std::llround(f.bytes)));
    of(f.to).receives.push_back(mailbox);
  }
  std::vector<ActorPool::Job> jobs;
  jobs.reserve(hosts.size());
  for (HostFlows& h : hosts) {
    std::stable_sort(h.sends.begin(), h.sends.end(),
                     [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    jobs.push_back({h.host, [&h] {
                      const double start = sg::Engine::get_clock();
                      std::vector<sg::CommPtr> comms;
                      std::vector<int*> data(h.receives.size());
                      comms.reserve(h.sends.size() + h.receives.size());
                      for (size_t k = 0; k < h.receives.size(); ++k)
                        comms.push_back(h.receives[k]->get_async<int>(&data[k]));
                      for (const auto& [delay, mailbox, bytes] : h.sends) {
                        if (delay > 0) sg::this_actor::sleep_until(start + delay);
                        comms.push_back(mailbox->put_async(&token, bytes));
                      }
                      sg::Comm::wait_all(comms);
                    }});
  }
  platform.actor_pool().run_all(std::move(jobs));
  for (sg::Mailbox* mailbox : used)
    platform.give_mailbox(mailbox);
}

void run_phase_by_steps(Platform& platform, const Phase& phase, bool alone) {
  std::vector<Flow> flows;
  flows.reserve(phase.round.message_count());
  phase.round.for_each_message([&](const Message& m) {
    flows.push_back({platform.device(m.src), platform.device(m.dst), m.bytes, 0.0});
  });
  if (alone && phase.repeats > 1) {
    // One representative round, then the others at its time.
    const double start = sg::Engine::get_clock();
    send_all(platform, flows);
    sg::this_actor::sleep_for((phase.repeats - 1) * (sg::Engine::get_clock() - start));
    return;
  }
  for (int r = 0; r < phase.repeats; ++r)
    send_all(platform, flows);
}

// Traffic from one node to another within a phase.
struct NodePairTraffic {
  double bytes = 0;
  std::set<int> sources, destinations;
  std::map<std::pair<int, int>, double> by_device;  // kept in case the pair is not merged
};

// Flow fidelity. A phase's rounds repeat one pattern, so every message's
// bytes are multiplied by the repeat count and sent once:
//  - traffic between two nodes that is spread over at least as many source
//    and destination devices as a node has NICs becomes one flow between the
//    node endpoints (it would load the NICs evenly; the node uplink carries
//    all of them);
//  - within a node, each member of an exchange sends all it owes its node
//    peers as one flow into the node's switch;
//  - everything else stays one flow per device pair.
// Each flow starts late by what the rounds would have spent in latency beyond
// its own route's: repeats x (device-level latency) - (flow route latency).
class PhaseFlows {
 public:
  PhaseFlows(Platform& platform, const Phase& phase)
      : platform_(platform),
        repeats_(phase.repeats),
        // Without node aggregates (a platform file), every flow stays per device pair.
        aggregates_(platform.has_node_aggregates()),
        spread_(aggregates_ ? std::max(1, std::min(platform.devices_per_node(), platform.profile().nics.per_node))
                            : std::numeric_limits<int>::max()) {}

  // The round's listed messages: per device pair, or merged per node pair when spread enough.
  void add_messages(const std::vector<Message>& messages) {
    std::map<std::pair<int, int>, NodePairTraffic> listed;
    for (const Message& m : messages) {
      const int a = platform_.node_of(m.src), b = platform_.node_of(m.dst);
      if (a == b) {
        device_pairs_[{m.src, m.dst}] += m.bytes * repeats_;
        continue;
      }
      NodePairTraffic& t = listed[{a, b}];
      t.bytes += m.bytes * repeats_;
      t.sources.insert(m.src);
      t.destinations.insert(m.dst);
      t.by_device[{m.src, m.dst}] += m.bytes * repeats_;
    }
    for (const auto& [nodes, t] : listed) {
      if (static_cast<int>(t.sources.size()) >= spread_ && static_cast<int>(t.destinations.size()) >= spread_ &&
          t.by_device.size() > 1) {
        node_flows_.emplace_back(*t.sources.begin(), *t.destinations.begin(), t.bytes);
      } else {
        for (const auto& [pair, bytes] : t.by_device)
          device_pairs_[pair] += bytes;
      }
    }
  }

  void add_exchange(const Exchange& x) {
    NodeMembers members_of_node;
    for (size_t i = 0; i < x.members.size(); ++i)
      members_of_node[platform_.node_of(x.members[i])].push_back(i);
    const bool uniform = is_uniform(x, members_of_node);
    if (uniform) {
      add_uniform_to_groups(x, members_of_node);
      add_uniform_inside_nodes(x, members_of_node);
    } else {
      add_by_node_pair(x, members_of_node);
    }
  }

  // Sends the phase's flows, each late by the latency its rounds would have spent.
  void send() {
    std::vector<Flow> flows;
    auto add = [&](sg::Host* from, sg::Host* to, double bytes, double device_latency) {
      const double delay = repeats_ * device_latency - platform_.latency(from, to);
      flows.push_back({from, to, bytes, std::max(0.0, delay)});
    };
    Platform& p = platform_;
    for (const auto& [src, dst, bytes] : node_flows_) {
      add(p.node_endpoint(p.node_of(src)), p.node_endpoint(p.node_of(dst)), bytes,
          p.latency(p.device(src), p.device(dst)));
    }
    for (const auto& [device, peer, bytes] : node_inside_) {
      const int node = p.node_of(device);
      add(p.node_endpoint(node), p.node_switch(node), bytes, p.latency(p.device(device), p.device(peer)));
    }
    for (const auto& [src, g, dst, bytes] : group_flows_) {
      add(p.node_endpoint(p.node_of(src)), p.group_endpoint(g), bytes, p.latency(p.device(src), p.device(dst)));
    }
    for (const auto& [pair, bytes] : device_pairs_) {
      add(p.device(pair.first), p.device(pair.second), bytes, p.latency(p.device(pair.first), p.device(pair.second)));
    }
    for (const auto& [device, owed] : into_node_) {
      add(p.device(device), p.node_switch(p.node_of(device)), owed.first,
          p.latency(p.device(device), p.device(owed.second)));
    }
    send_all(platform_, flows);
  }

 private:
  using NodeMembers = std::map<int, std::vector<size_t>>;  // node -> indices into the exchange's members

  // A uniform exchange among many nodes is merged per (node, switch group):
  // every node sends as much as it receives, so the node uplinks and the
  // group links carry it all; 96 x 8 flows instead of 96 x 95 at 1,536.
  bool is_uniform(const Exchange& x, const NodeMembers& members_of_node) const {
    bool uniform = aggregates_ && static_cast<int>(members_of_node.size()) > platform_.group_merge_min_nodes();
    for (size_t j = 1; uniform && j < x.bytes_to.size(); ++j)
      uniform = x.bytes_to[j] == x.bytes_to[0];
    for (const auto& [node, ids] : members_of_node) {
      uniform =
          uniform && static_cast<int>(ids.size()) >= spread_ && ids.size() == members_of_node.begin()->second.size();
    }
    return uniform;
  }

  // A uniform exchange across nodes: one flow from each node to each switch group.
  void add_uniform_to_groups(const Exchange& x, const NodeMembers& members_of_node) {
    std::map<int, double> to_group;  // bytes every sender owes one group
    for (const auto& [node, ids] : members_of_node) {
      for (size_t j : ids)
        to_group[platform_.group_of_node(node)] += x.bytes_to[j];
    }
    for (const auto& [a, senders] : members_of_node) {
      double own = 0;  // what stays inside node a (sent through its switch, below)
      for (size_t j : senders)
        own += x.bytes_to[j];
      for (const auto& [g, total] : to_group) {
        const double per_sender = g == platform_.group_of_node(a) ? total - own : total;
        if (per_sender <= 0) continue;
        int dst = -1;  // a device of group g on another node, for the latency of one round
        for (const auto& [b, ids] : members_of_node) {
          if (b != a && platform_.group_of_node(b) == g) {
            dst = x.members[ids.front()];
            break;
          }
        }
        if (dst < 0) continue;
        group_flows_.emplace_back(x.members[senders.front()], g, dst,
                                  per_sender * static_cast<double>(senders.size()) * repeats_);
      }
    }
  }

  // A uniform exchange inside each node: one flow too, every device sending
  // (m - 1) shares through its own fabric link.
  void add_uniform_inside_nodes(const Exchange& x, const NodeMembers& members_of_node) {
    for (const auto& [a, senders] : members_of_node) {
      if (senders.size() < 2) continue;
      double inside = 0;
      for (size_t i : senders) {
        for (size_t j : senders) {
          if (i != j) inside += x.bytes_to[j];
        }
      }
      node_inside_.emplace_back(x.members[senders[0]], x.members[senders[1]], inside * repeats_);
    }
  }

  // Any other exchange, node pair by node pair: into the node's switch inside
  // a node, node endpoint to node endpoint when spread enough, else per device pair.
  void add_by_node_pair(const Exchange& x, const NodeMembers& members_of_node) {
    for (const auto& [a, senders] : members_of_node) {
      for (const auto& [b, receivers] : members_of_node) {
        double to_b = 0;
        for (size_t j : receivers)
          to_b += x.bytes_to[j];
        if (a == b) {
          if (senders.size() >= 2) add_inside_node(x, senders, to_b);
        } else if (static_cast<int>(senders.size()) >= spread_ && static_cast<int>(receivers.size()) >= spread_) {
          node_flows_.emplace_back(x.members[senders[0]], x.members[receivers[0]],
                                   to_b * static_cast<double>(senders.size()) * repeats_);
        } else {
          for (size_t i : senders) {
            for (size_t j : receivers)
              device_pairs_[{x.members[i], x.members[j]}] += x.bytes_to[j] * repeats_;
          }
        }
      }
    }
  }

  // A node's members' traffic to each other (`to_node`: what the exchange
  // sends to the node's members): into the node's switch, or per device pair
  // without node aggregates.
  void add_inside_node(const Exchange& x, const std::vector<size_t>& senders, double to_node) {
    if (!aggregates_) {
      for (size_t i : senders) {
        for (size_t j : senders) {
          if (i != j) device_pairs_[{x.members[i], x.members[j]}] += x.bytes_to[j] * repeats_;
        }
      }
      return;
    }
    for (size_t i : senders) {
      auto& [bytes, peer] = into_node_[x.members[i]];
      bytes += (to_node - x.bytes_to[i]) * repeats_;
      peer = x.members[senders[i == senders[0] ? 1 : 0]];
    }
  }

  Platform& platform_;
  const double repeats_;
  const bool aggregates_;
  const int spread_;  // source and destination devices a node pair's traffic needs to merge
  std::map<std::pair<int, int>, double> device_pairs_;    // flows that stay per device pair
  std::map<int, std::pair<double, int>> into_node_;       // device -> (bytes, a node peer) of exchange traffic
  std::vector<std::tuple<int, int, double>> node_flows_;  // (representative source device, destination device, bytes)
  std::vector<std::tuple<int, int, int, double>> group_flows_;  // (source device, group, destination device, bytes)
  std::vector<std::tuple<int, int, double>> node_inside_;       // (device, a peer in its node, bytes of the whole node)
};

// The phase as flows (PhaseFlows): its listed messages, then its exchanges.
void run_phase_as_flows(Platform& platform, const Phase& phase) {
  PhaseFlows flows(platform, phase);
  flows.add_messages(phase.round.messages);
  for (const Exchange& x : phase.round.exchanges)
    flows.add_exchange(x);
  flows.send();
}

}  // namespace

std::string_view fidelity_name(Fidelity fidelity) {
  return fidelity == Fidelity::kStep ? "step" : "flow";
}

void run_collective(Platform& platform, const CollectiveSchedule& schedule, Fidelity fidelity, bool alone) {
  for (const Phase& phase : schedule.phases) {
    if (fidelity == Fidelity::kStep) {
      run_phase_by_steps(platform, phase, alone);
    } else {
      run_phase_as_flows(platform, phase);
    }
  }
}

}  // namespace clustertwin::sim
