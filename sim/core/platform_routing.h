// The network model of a built platform as routes (internal to sim/core):
// where each host sits, the links of each node and of the aggregation levels
// above the nodes, and which links a flow from one host to another crosses.
// Platform::build (platform.cpp) fills it in; TwinZone (twin_zone.h) computes
// routes from it when SimGrid asks, and Routes::kStored stores them from it.
// The visits are templates, so that the route of each flow is walked without
// a call per link.
#pragma once

#include <cstdint>
#include <vector>

#include "models/cluster/cluster_profile.h"

namespace simgrid::s4u {
class Link;
}  // namespace simgrid::s4u

namespace clustertwin::sim::detail {

// The aggregation levels above the nodes: for each level, the group of each
// node and the uplink capacity of each group (see sim/platforms/README.md).
struct Levels {
  std::vector<std::vector<int>> group_of_node;  // [level][node]
  std::vector<std::vector<double>> uplink;      // [level][group] bytes/s
};

// The levels of `p`'s topology above `nodes` nodes whose uplinks carry
// `node_bandwidth` each.
Levels aggregation_levels(const cluster::ClusterProfile& p, int nodes, double node_bandwidth);

// Where a host sits: its node and what it is there.
struct Place {
  enum class Role : uint8_t { kDevice, kCpu, kCores, kEndpoint, kSwitch, kGroup };
  Role role;
  int node;   // for a group endpoint, the first node of its group (routes into a
              // group go its way)
  int index;  // a device's or host side's index in its node; a group endpoint's
              // group
};

// The links of one node (see the diagram in platform.h).
struct NodeLinks {
  std::vector<simgrid::s4u::Link*> nic_up, nic_down;  // [nic]
  std::vector<int> nic_of;                            // [device]: the NIC the device uses
  std::vector<simgrid::s4u::Link*> pcie_up,
      pcie_down;  // [device]: host side to device, and back
  std::vector<simgrid::s4u::Link*> fabric_up,
      fabric_down;                           // [device]: to the node switch, and back
  std::vector<simgrid::s4u::Link*> mesh;     // [i * m + j]: device i to j, on a full mesh only
  simgrid::s4u::Link* fabric_all = nullptr;  // the node endpoint to its switch
};

// The network model of a built platform as routes: which links a flow from
// one host to another crosses, in order. Both ways of keeping routes
// (Platform::Routes) take them from here.
struct Routing {
  Levels levels;
  std::vector<simgrid::s4u::Link*> node_up,
      node_down;  // [node]: to the first level and back
  std::vector<std::vector<simgrid::s4u::Link*>> level_up,
      level_down;                // [level][group]
  std::vector<NodeLinks> nodes;  // [node]

  // Calls `visit` on each link of the route between two hosts of one node
  // (not a group endpoint); false when the model has no such route.
  template <class Visit>
  bool visit_local(const Place& from, const Place& to, Visit&& visit) const {
    using Role = Place::Role;
    const NodeLinks& n = nodes[from.node];
    const int i = from.index, j = to.index;
    switch (from.role) {
      case Role::kDevice:
        switch (to.role) {
          case Role::kEndpoint:
            visit(n.nic_up[n.nic_of[i]]);
            return true;
          case Role::kCpu:
            if (i != j) return false;
            visit(n.pcie_down[i]);
            return true;
          case Role::kSwitch:
            visit(n.fabric_up[i]);
            return true;
          case Role::kDevice:
            if (!n.mesh.empty()) {
              visit(n.mesh[static_cast<size_t>(i) * n.fabric_up.size() + j]);
            } else {
              // Through the node's switch: the sender's link up, the receiver's
              // link down.
              visit(n.fabric_up[i]);
              visit(n.fabric_down[j]);
            }
            return true;
          default:
            return false;
        }
      case Role::kCpu:
        if (to.role != Role::kDevice || i != j) return false;
        visit(n.pcie_up[i]);
        return true;
      case Role::kEndpoint:
        if (to.role == Role::kDevice) {
          visit(n.nic_down[n.nic_of[j]]);
        } else if (to.role == Role::kSwitch) {
          visit(n.fabric_all);
        } else {
          return false;
        }
        return true;
      case Role::kSwitch:
        if (to.role != Role::kDevice) return false;
        visit(n.fabric_down[j]);
        return true;
      default:
        return false;
    }
  }

  // Calls `visit` on each link from node a towards node b, in order: a's
  // uplink, a's group uplinks up to the first level where a and b share a
  // group, b's group downlinks back down, then b's downlink when `into_b`
  // (a route into b's first-level group ends above it).
  template <class Visit>
  void visit_fabric(int a, int b, bool into_b, Visit&& visit) const {
    visit(node_up[a]);
    size_t common = 0;  // the first level at which a and b share a group
                        // (levels.size() when none does)
    while (common < levels.group_of_node.size() && levels.group_of_node[common][a] != levels.group_of_node[common][b])
      ++common;
    for (size_t l = 0; l < common; ++l)
      visit(level_up[l][levels.group_of_node[l][a]]);
    for (size_t l = common; l-- > 0;)
      visit(level_down[l][levels.group_of_node[l][b]]);
    if (into_b) visit(node_down[b]);
  }
};

}  // namespace clustertwin::sim::detail
