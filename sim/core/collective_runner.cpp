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
void run_phase_as_flows(Platform& platform, const Phase& phase) {
  const Round& round = phase.round;
  const double repeats = phase.repeats;
  // Without node aggregates (a platform file), every flow stays per device pair.
  const bool aggregates = platform.has_node_aggregates();
  const int spread = aggregates ? std::max(1, std::min(platform.devices_per_node(), platform.profile().nics.per_node))
                                : std::numeric_limits<int>::max();
  std::map<std::pair<int, int>, NodePairTraffic> listed;  // from round.messages
  std::map<std::pair<int, int>, double> device_pairs;     // flows that stay per device pair
  std::map<int, std::pair<double, int>> into_node;        // device -> (bytes, a node peer) of exchange traffic
  std::vector<std::tuple<int, int, double>> node_flows;   // (representative source device, destination device, bytes)

  for (const Message& m : round.messages) {
    const int a = platform.node_of(m.src), b = platform.node_of(m.dst);
    if (a == b) {
      device_pairs[{m.src, m.dst}] += m.bytes * repeats;
      continue;
    }
    NodePairTraffic& t = listed[{a, b}];
    t.bytes += m.bytes * repeats;
    t.sources.insert(m.src);
    t.destinations.insert(m.dst);
    t.by_device[{m.src, m.dst}] += m.bytes * repeats;
  }
  for (const auto& [nodes, t] : listed) {
    if (static_cast<int>(t.sources.size()) >= spread && static_cast<int>(t.destinations.size()) >= spread &&
        t.by_device.size() > 1) {
      node_flows.emplace_back(*t.sources.begin(), *t.destinations.begin(), t.bytes);
    } else {
      for (const auto& [pair, bytes] : t.by_device)
        device_pairs[pair] += bytes;
    }
  }
  std::vector<std::tuple<int, int, int, double>> group_flows;  // (source device, group, destination device, bytes)
  std::vector<std::tuple<int, int, double>> node_inside;       // (device, a peer in its node, bytes of the whole node)
  for (const Exchange& x : round.exchanges) {
    std::map<int, std::vector<size_t>> members_of_node;
    for (size_t i = 0; i < x.members.size(); ++i)
      members_of_node[platform.node_of(x.members[i])].push_back(i);
    // A uniform exchange among many nodes is merged per (node, switch group):
    // every node sends as much as it receives, so the node uplinks and the
    // group links carry it all; 96 x 8 flows instead of 96 x 95 at 1,536.
    bool uniform = aggregates && static_cast<int>(members_of_node.size()) > platform.group_merge_min_nodes();
    for (size_t j = 1; uniform && j < x.bytes_to.size(); ++j)
      uniform = x.bytes_to[j] == x.bytes_to[0];
    for (const auto& [node, ids] : members_of_node) {
      uniform =
          uniform && static_cast<int>(ids.size()) >= spread && ids.size() == members_of_node.begin()->second.size();
    }
    if (uniform) {
      std::map<int, double> to_group;  // bytes every sender owes one group
      for (const auto& [node, ids] : members_of_node) {
        for (size_t j : ids)
          to_group[platform.group_of_node(node)] += x.bytes_to[j];
      }
      for (const auto& [a, senders] : members_of_node) {
        double own = 0;  // what stays inside node a (sent through its switch, below)
        for (size_t j : senders)
          own += x.bytes_to[j];
        for (const auto& [g, total] : to_group) {
          const double per_sender = g == platform.group_of_node(a) ? total - own : total;
          if (per_sender <= 0) continue;
          int dst = -1;  // a device of group g on another node, for the latency of one round
          for (const auto& [b, ids] : members_of_node) {
            if (b != a && platform.group_of_node(b) == g) {
              dst = x.members[ids.front()];
              break;
            }
          }
          if (dst < 0) continue;
          group_flows.emplace_back(x.members[senders.front()], g, dst,
                                   per_sender * static_cast<double>(senders.size()) * repeats);
        }
      }
    }
    for (const auto& [a, senders] : members_of_node) {
      if (uniform && senders.size() > 1) {
        // Inside the node too, one flow: every device sends (m - 1) shares through its own fabric link.
        double inside = 0;
        for (size_t i : senders) {
          for (size_t j : senders) {
            if (i != j) inside += x.bytes_to[j];
          }
        }
        node_inside.emplace_back(x.members[senders[0]], x.members[senders[1]], inside * repeats);
      }
    }
    for (const auto& [a, senders] : members_of_node) {
      for (const auto& [b, receivers] : members_of_node) {
        if (uniform) continue;  // merged per group and per node above
        double to_b = 0;
        for (size_t j : receivers)
          to_b += x.bytes_to[j];
        if (a == b) {
          if (senders.size() < 2) continue;
          if (!aggregates) {
            for (size_t i : senders) {
              for (size_t j : receivers) {
                if (i != j) device_pairs[{x.members[i], x.members[j]}] += x.bytes_to[j] * repeats;
              }
            }
            continue;
          }
          for (size_t i : senders) {
            auto& [bytes, peer] = into_node[x.members[i]];
            bytes += (to_b - x.bytes_to[i]) * repeats;
            peer = x.members[senders[i == senders[0] ? 1 : 0]];
          }
        } else if (static_cast<int>(senders.size()) >= spread && static_cast<int>(receivers.size()) >= spread) {
          node_flows.emplace_back(x.members[senders[0]], x.members[receivers[0]],
                                  to_b * static_cast<double>(senders.size()) * repeats);
        } else {
          for (size_t i : senders) {
            for (size_t j : receivers)
              device_pairs[{x.members[i], x.members[j]}] += x.bytes_to[j] * repeats;
          }
        }
      }
    }
  }

  std::vector<Flow> flows;
  auto add = [&](sg::Host* from, sg::Host* to, double bytes, double device_latency) {
    const double delay = repeats * device_latency - platform.latency(from, to);
    flows.push_back({from, to, bytes, std::max(0.0, delay)});
  };
  for (const auto& [src, dst, bytes] : node_flows) {
    add(platform.node_endpoint(platform.node_of(src)), platform.node_endpoint(platform.node_of(dst)), bytes,
        platform.latency(platform.device(src), platform.device(dst)));
  }
  for (const auto& [device, peer, bytes] : node_inside) {
    const int node = platform.node_of(device);
    add(platform.node_endpoint(node), platform.node_switch(node), bytes,
        platform.latency(platform.device(device), platform.device(peer)));
  }
  for (const auto& [src, g, dst, bytes] : group_flows) {
    add(platform.node_endpoint(platform.node_of(src)), platform.group_endpoint(g), bytes,
        platform.latency(platform.device(src), platform.device(dst)));
  }
  for (const auto& [pair, bytes] : device_pairs) {
    add(platform.device(pair.first), platform.device(pair.second), bytes,
        platform.latency(platform.device(pair.first), platform.device(pair.second)));
  }
  for (const auto& [device, owed] : into_node) {
    add(platform.device(device), platform.node_switch(platform.node_of(device)), owed.first,
        platform.latency(platform.device(device), platform.device(owed.second)));
  }
  send_all(platform, flows);
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
