// The aggregation levels above a built platform's nodes (the fluid fat tree,
// rail leaf-spine or dragonfly of a profile's topology): which group each
// node is in at each level, and each group's uplink capacity.
#include "sim/core/platform_routing.h"

#include <algorithm>

namespace clustertwin::sim::detail {

Levels aggregation_levels(const cluster::ClusterProfile& p, int nodes, double node_bandwidth) {
  Levels out;
  auto oversub = [&](size_t level) {
    if (p.topology.oversubscription.empty()) return 1.0;
    return p.topology.oversubscription[std::min(level, p.topology.oversubscription.size() - 1)];
  };
  auto add_level = [&](int children_per_group, const std::vector<double>& child_capacity,
                       const std::vector<int>& child_of_node, double divisor, double fixed_capacity) {
    const int groups = (static_cast<int>(child_capacity.size()) + children_per_group - 1) / children_per_group;
    std::vector<double> capacity(groups, 0.0);
    for (size_t c = 0; c < child_capacity.size(); ++c)
      capacity[c / children_per_group] += child_capacity[c];
    for (double& c : capacity)
      c = fixed_capacity > 0 ? fixed_capacity : c / divisor;
    std::vector<int> group(nodes);
    for (int n = 0; n < nodes; ++n)
      group[n] = child_of_node[n] / children_per_group;
    out.group_of_node.push_back(std::move(group));
    out.uplink.push_back(std::move(capacity));
  };
  std::vector<int> identity(nodes);
  for (int n = 0; n < nodes; ++n)
    identity[n] = n;
  const std::vector<double> node_capacity(nodes, node_bandwidth);
  const cluster::Topology& t = p.topology;
  switch (t.kind) {
    case cluster::Topology::Kind::kSingleSwitch:
      break;
    case cluster::Topology::Kind::kFatTree:
    case cluster::Topology::Kind::kRailLeafSpine: {
      const int group_levels = t.kind == cluster::Topology::Kind::kFatTree ? t.levels - 1 : 1;
      if (group_levels >= 1) add_level(std::max(1, t.nodes_per_leaf), node_capacity, identity, oversub(0), 0);
      for (int level = 1; level < group_levels; ++level) {
        add_level(std::max(2, t.radix), out.uplink.back(), out.group_of_node.back(), oversub(level), 0);
      }
      break;
    }
    case cluster::Topology::Kind::kDragonfly: {
      add_level(std::max(1, t.nodes_per_leaf), node_capacity, identity, 1.0,
                0);  // routers: local links non-blocking
      const double global =
          static_cast<double>(t.routers_per_group) * t.global_links_per_router * t.switch_link.bandwidth;
      add_level(std::max(1, t.routers_per_group), out.uplink.back(), out.group_of_node.back(), 1.0, global);
      break;
    }
  }
  return out;
}

}  // namespace clustertwin::sim::detail
