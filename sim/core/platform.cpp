#include "sim/core/platform.h"

#include <algorithm>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "sim/core/actor_pool.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;

std::string name_of(const char* prefix, int a) {
  return std::string(prefix) + std::to_string(a);
}
std::string name_of(const char* prefix, int a, int b) {
  return std::string(prefix) + std::to_string(a) + "." + std::to_string(b);
}

sg::Link* make_link(sg::NetZone* zone, const std::string& name, double bandwidth, double latency) {
  return zone->create_link(name, bandwidth)->set_latency(latency)->seal();
}

// The aggregation levels above the nodes: for each level, the group of each
// node and the uplink capacity of each group (see sim/platforms/README.md).
struct Levels {
  std::vector<std::vector<int>> group_of_node;  // [level][node]
  std::vector<std::vector<double>> uplink;      // [level][group] bytes/s
};

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
      add_level(std::max(1, t.nodes_per_leaf), node_capacity, identity, 1.0, 0);  // routers: local links non-blocking
      const double global =
          static_cast<double>(t.routers_per_group) * t.global_links_per_router * t.switch_link.bandwidth;
      add_level(std::max(1, t.routers_per_group), out.uplink.back(), out.group_of_node.back(), 1.0, global);
      break;
    }
  }
  return out;
}

}  // namespace

void configure_engine_for_twin() {
  sg::Engine* e = sg::Engine::get_instance();
  // CM02 without the TCP window bound or cross-traffic: a flow alone on a
  // route takes exactly latency + bytes / bandwidth.
  e->set_config("network/model:CM02");
  e->set_config("network/TCP-gamma:0");
  e->set_config("network/crosstraffic:0");
}

TwinEngine::TwinEngine() {
  int argc = 3;
  char arg0[] = "clustertwin";
  char arg1[] = "--log=root.thresh:critical";
  char arg2[] = "--cfg=contexts/stack-size:256";
  char* argv[] = {arg0, arg1, arg2, nullptr};
  engine_ = std::make_unique<sg::Engine>(&argc, argv);
  configure_engine_for_twin();
}

TwinEngine::~TwinEngine() = default;

Platform::Platform(const cluster::ClusterProfile& profile, int workers)
    : profile_(profile),
      workers_(workers),
      devices_per_node_(std::min(workers, profile.devices_per_node)),
      actor_pool_(std::make_unique<ActorPool>()) {}

Platform::~Platform() = default;

StatusOr<std::unique_ptr<Platform>> Platform::load_xml(const cluster::ClusterProfile& profile, int workers) {
  sg::Engine* engine = sg::Engine::get_instance();
  try {
    engine->load_platform(profile.simgrid_platform);
  } catch (const std::exception& e) {
    return Status::invalid_argument(profile.simgrid_platform + ": not a SimGrid platform: " + e.what());
  }
  std::vector<sg::Host*> hosts = engine->get_all_hosts();
  // File order: netpoint ids follow creation order.
  std::sort(hosts.begin(), hosts.end(),
            [](sg::Host* a, sg::Host* b) { return a->get_netpoint()->id() < b->get_netpoint()->id(); });
  if (static_cast<int>(hosts.size()) < workers) {
    return Status::invalid_argument("--workers " + std::to_string(workers) + ": platform file '" +
                                    profile.simgrid_platform + "' has " + std::to_string(hosts.size()) + " hosts");
  }
  std::unique_ptr<Platform> platform(new Platform(profile, workers));
  platform->devices_per_node_ = 1;
  platform->devices_.assign(hosts.begin(), hosts.begin() + workers);
  platform->cpus_ = platform->devices_;
  return platform;
}

StatusOr<std::unique_ptr<Platform>> Platform::build(const cluster::ClusterProfile& profile, int workers) {
  CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, workers));
  if (!profile.simgrid_platform.empty()) return load_xml(profile, workers);
  std::unique_ptr<Platform> platform(new Platform(profile, workers));
  const int m = platform->devices_per_node_;
  const int nodes = (workers + m - 1) / m;
  const cluster::ClusterProfile& p = profile;
  const int nics = std::max(1, std::min(p.nics.per_node, m));
  const double node_bandwidth = nics * p.nics.link.bandwidth;

  sg::NetZone* root = sg::create_full_zone("cluster");
  std::vector<sg::NetZone*> node_zones;
  std::vector<simgrid::kernel::routing::NetPoint*> gateways;
  std::vector<sg::Link*> node_up, node_down;
  platform->devices_.resize(workers);
  platform->cpus_.resize(workers);

  for (int k = 0; k < nodes; ++k) {
    sg::NetZone* z = sg::create_full_zone(name_of("node", k));
    z->set_parent(root);
    const int first = k * m;
    std::vector<sg::Host*> dev(m), cpu(m);
    for (int i = 0; i < m; ++i) {
      const int r = first + i;
      dev[i] = z->create_host(name_of("dev", r), kWorkUnitsPerSecond / p.slowdown_of(r));
      cpu[i] = z->create_host(name_of("cpu", r), kWorkUnitsPerSecond);
      platform->devices_[r] = dev[i];
      platform->cpus_[r] = cpu[i];
    }
    // The node endpoint doubles as the zone's gateway, so node-to-node
    // aggregate flows cross only the fabric; the node switch host receives a
    // device's aggregate intra-node traffic.
    if (p.node_cores > 0) {
      // Each core runs 1e9 work units per second; an exec uses at most one.
      platform->pools_.push_back(
          z->create_host(name_of("cores", k), kWorkUnitsPerSecond)->set_core_count(p.node_cores));
    }
    sg::Host* endpoint = z->create_host(name_of("node", k, 0), kWorkUnitsPerSecond);
    sg::Host* node_switch = z->create_host(name_of("switch", k), kWorkUnitsPerSecond);
    platform->node_endpoints_.push_back(endpoint);
    platform->node_switches_.push_back(node_switch);
    auto* gw = endpoint->get_netpoint();
    gateways.push_back(gw);
    std::vector<sg::Link*> nic_up(nics), nic_down(nics), fabric_up(m), fabric_down(m);
    for (int n = 0; n < nics; ++n) {
      nic_up[n] = make_link(z, name_of("nic_up", k, n), p.nics.link.bandwidth, p.nics.link.latency);
      nic_down[n] = make_link(z, name_of("nic_down", k, n), p.nics.link.bandwidth, p.nics.link.latency);
    }
    const double intra_bw = p.intra_node.link.bandwidth, intra_lat = p.intra_node.link.latency;
    const bool mesh = p.intra_node.kind == cluster::IntraNode::Kind::kFullMesh;
    for (int i = 0; i < m; ++i) {
      const int r = first + i;
      const int nic = i * nics / m;  // device i's NIC: its own when there is one per device
      z->add_route(dev[i]->get_netpoint(), gw, nullptr, nullptr, {sg::LinkInRoute(nic_up[nic])}, false);
      z->add_route(gw, dev[i]->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(nic_down[nic])}, false);
      sg::Link* pcie_up = make_link(z, name_of("pcie_up", r), p.host_link.bandwidth, p.host_link.latency);
      sg::Link* pcie_down = make_link(z, name_of("pcie_down", r), p.host_link.bandwidth, p.host_link.latency);
      z->add_route(cpu[i]->get_netpoint(), dev[i]->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(pcie_up)}, false);
      z->add_route(dev[i]->get_netpoint(), cpu[i]->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(pcie_down)},
                   false);
      // Device to the node endpoint: the device's whole intra-node capacity,
      // for flow-fidelity traffic merged per device.
      const double to_node = mesh ? intra_bw * std::max(1, m - 1) : intra_bw;
      sg::Link* agg_up = make_link(z, name_of("fabric_up", r), to_node, intra_lat / 2);
      sg::Link* agg_down = make_link(z, name_of("fabric_down", r), to_node, intra_lat / 2);
      fabric_up[i] = agg_up;
      fabric_down[i] = agg_down;
      z->add_route(dev[i]->get_netpoint(), node_switch->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(agg_up)},
                   false);
      z->add_route(node_switch->get_netpoint(), dev[i]->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(agg_down)},
                   false);
    }
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < m; ++j) {
        if (i == j) continue;
        std::vector<sg::LinkInRoute> route;
        if (mesh) {
          route.emplace_back(make_link(z, name_of("mesh", first + i, first + j), intra_bw, intra_lat));
        } else {
          // Through the node's switch: the sender's link up, the receiver's link down.
          route.emplace_back(fabric_up[i]);
          route.emplace_back(fabric_down[j]);
        }
        z->add_route(dev[i]->get_netpoint(), dev[j]->get_netpoint(), nullptr, nullptr, route, false);
      }
    }
    // The whole node's intra-node capacity, for a uniform exchange merged per node.
    const double per_device = mesh ? intra_bw * std::max(1, m - 1) : intra_bw;
    sg::Link* fabric_all = make_link(z, name_of("fabric_all", k), per_device * m, intra_lat / 2);
    z->add_route(endpoint->get_netpoint(), node_switch->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(fabric_all)},
                 false);
    z->seal();
    node_zones.push_back(z);
    node_up.push_back(make_link(root, name_of("node_up", k), node_bandwidth, p.topology.switch_link.latency));
    node_down.push_back(make_link(root, name_of("node_down", k), node_bandwidth, 0));
  }

  // Aggregation levels above the nodes, then one route per node pair.
  const Levels levels = aggregation_levels(p, nodes, node_bandwidth);
  std::vector<std::vector<sg::Link*>> level_up(levels.uplink.size()), level_down(levels.uplink.size());
  for (size_t l = 0; l < levels.uplink.size(); ++l) {
    for (size_t g = 0; g < levels.uplink[l].size(); ++g) {
      const int id = static_cast<int>(l + 1) * 100000 + static_cast<int>(g);
      level_up[l].push_back(make_link(root, name_of("up", id), levels.uplink[l][g], p.topology.switch_link.latency));
      level_down[l].push_back(
          make_link(root, name_of("down", id), levels.uplink[l][g], p.topology.switch_link.latency));
    }
  }
  for (int a = 0; a < nodes; ++a) {
    for (int b = 0; b < nodes; ++b) {
      if (a == b) continue;
      std::vector<sg::LinkInRoute> route{sg::LinkInRoute(node_up[a])};
      size_t common = 0;  // the first level at which a and b share a group (levels.size() when none does)
      while (common < levels.group_of_node.size() &&
             levels.group_of_node[common][a] != levels.group_of_node[common][b]) {
        ++common;
      }
      for (size_t l = 0; l < common; ++l)
        route.emplace_back(level_up[l][levels.group_of_node[l][a]]);
      for (size_t l = common; l-- > 0;)
        route.emplace_back(level_down[l][levels.group_of_node[l][b]]);
      route.emplace_back(node_down[b]);
      root->add_route(node_zones[a]->get_netpoint(), node_zones[b]->get_netpoint(), gateways[a], gateways[b], route,
                      false);
    }
  }
  // One endpoint per first-level group (the whole cluster on one switch): a
  // node's share of an all-to-all bound for a group crosses the node uplink
  // and the levels up to their common ancestor, then the group's downlink.
  const int groups = levels.group_of_node.empty() ? 1 : static_cast<int>(levels.uplink[0].size());
  std::vector<sg::NetZone*> group_zones;
  for (int g = 0; g < groups; ++g) {
    // In a zone of its own: SimGrid routes between zones, or between hosts of one zone.
    sg::NetZone* z = sg::create_full_zone(name_of("group_zone", g));
    z->set_parent(root);
    platform->group_endpoints_.push_back(z->create_host(name_of("group", g), kWorkUnitsPerSecond));
    z->seal();
    group_zones.push_back(z);
  }
  platform->group_of_node_.resize(nodes, 0);
  for (int a = 0; a < nodes; ++a) {
    if (!levels.group_of_node.empty()) platform->group_of_node_[a] = levels.group_of_node[0][a];
  }
  for (int a = 0; a < nodes; ++a) {
    for (int g = 0; g < groups; ++g) {
      int rep = 0;  // a node of group g
      while (rep < nodes && platform->group_of_node_[rep] != g)
        ++rep;
      std::vector<sg::LinkInRoute> route{sg::LinkInRoute(node_up[a])};
      size_t common = 0;
      while (common < levels.group_of_node.size() &&
             levels.group_of_node[common][a] != levels.group_of_node[common][rep]) {
        ++common;
      }
      for (size_t l = 0; l < common; ++l)
        route.emplace_back(level_up[l][levels.group_of_node[l][a]]);
      for (size_t l = common; l-- > 0;)
        route.emplace_back(level_down[l][levels.group_of_node[l][rep]]);
      root->add_route(node_zones[a]->get_netpoint(), group_zones[g]->get_netpoint(), gateways[a],
                      platform->group_endpoints_[g]->get_netpoint(), route, false);
    }
  }
  root->seal();
  return platform;
}

sg::Mailbox* Platform::take_mailbox() {
  if (!free_mailboxes_.empty()) {
    sg::Mailbox* mailbox = free_mailboxes_.back();
    free_mailboxes_.pop_back();
    return mailbox;
  }
  return sg::Mailbox::by_name(mailbox_prefix_ + std::to_string(mailboxes_created_++));
}

double Platform::work_units(int rank, double seconds) const {
  // Built platforms give devices 1e9 units per second divided by the
  // slowdown; a platform file's hosts keep their own speed.
  if (profile_.simgrid_platform.empty()) return seconds * kWorkUnitsPerSecond;
  return seconds * devices_[rank]->get_speed() / profile_.slowdown_of(rank);
}

double Platform::latency(sg::Host* from, sg::Host* to) {
  if (from == to) return 0;
  auto key = std::make_pair(from, to);
  auto it = latency_cache_.find(key);
  if (it != latency_cache_.end()) return it->second;
  std::vector<sg::Link*> links;
  double latency = 0;
  from->route_to(to, links, &latency);
  latency_cache_.emplace(key, latency);
  return latency;
}

}  // namespace clustertwin::sim
