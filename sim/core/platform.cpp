// The Platform: the SimGrid hosts, links and zones of a cluster profile for
// a number of workers (devices, host sides, the nodes' shared core pools,
// node endpoints and switches, group endpoints), or the hosts of a SimGrid
// platform file; the engine settings the twin assumes; and the services a
// run asks of a platform (work units, route latency, mailboxes). The routes
// themselves are platform_routing.h's (kept by TwinZone, twin_zone.h, or
// stored in full zones); a job's view of a shared platform is platform_place.cpp's.
#include "sim/core/platform.h"

#include <malloc.h>

#include <algorithm>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include "common/check.h"
#include "sim/core/actor_pool.h"
#include "sim/core/platform_routing.h"
#include "sim/core/twin_zone.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;
using detail::Place;
using detail::Routing;

std::string name_of(const char* prefix, int a) {
  return std::string(prefix) + std::to_string(a);
}
std::string name_of(const char* prefix, int a, int b) {
  return std::string(prefix) + std::to_string(a) + "." + std::to_string(b);
}

sg::Link* make_link(sg::NetZone* zone, const std::string& name, double bandwidth, double latency) {
  return zone->create_link(name, bandwidth)->set_latency(latency)->seal();
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

TwinEngine::TwinEngine(bool stack_guards) {
  int argc = stack_guards ? 3 : 4;
  char arg0[] = "clustertwin";
  char arg1[] = "--log=root.thresh:critical";
  char arg2[] = "--cfg=contexts/stack-size:256";
  char arg3[] = "--cfg=contexts/guard-size:0";
  char* argv[] = {arg0, arg1, arg2, stack_guards ? nullptr : arg3, nullptr};
  if (!stack_guards) {
    // Unguarded stacks come from malloc, which zeroes them: keep each in a
    // mapping of its own (fresh pages, zero without being touched) by fixing
    // glibc's threshold, which otherwise rises past a stack's size once a
    // large block is freed and puts stacks on the heap, written in full.
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  }
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

StatusOr<std::unique_ptr<Platform>> Platform::build(const cluster::ClusterProfile& profile, int workers,
                                                    Routes routes) {
  CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, workers));
  if (!profile.simgrid_platform.empty()) return load_xml(profile, workers);
  std::unique_ptr<Platform> platform(new Platform(profile, workers));
  const int m = platform->devices_per_node_;
  const int nodes = (workers + m - 1) / m;
  const cluster::ClusterProfile& p = profile;
  const int nics = std::max(1, std::min(p.nics.per_node, m));
  const double node_bandwidth = nics * p.nics.link.bandwidth;
  const bool stored = routes == Routes::kStored;

  // Computed: one zone holds everything. Stored: a full zone per node (its
  // endpoint the gateway) under a full root zone with a route per node pair.
  detail::TwinZone* twin = stored ? nullptr : new detail::TwinZone("cluster");  // SimGrid owns zones
  sg::NetZone* root = stored ? sg::create_full_zone("cluster") : twin->get_iface();
  Routing local_routing;
  Routing& routing = stored ? local_routing : twin->routing();
  routing.nodes.resize(nodes);
  std::vector<sg::NetZone*> node_zones;
  platform->devices_.resize(workers);
  platform->cpus_.resize(workers);

  for (int k = 0; k < nodes; ++k) {
    sg::NetZone* z = root;
    if (stored) {
      z = sg::create_full_zone(name_of("node", k));
      z->set_parent(root);
    }
    std::vector<std::pair<sg::Host*, Place>> hosts;  // of this node, for the stored routes
    auto placed = [&](sg::Host* host, Place::Role role, int index) {
      hosts.emplace_back(host, Place{role, k, index});
      if (!stored) twin->place(host, hosts.back().second);
      return host;
    };
    const int first = k * m;
    for (int i = 0; i < m; ++i) {
      const int r = first + i;
      platform->devices_[r] =
          placed(z->create_host(name_of("dev", r), kWorkUnitsPerSecond / p.slowdown_of(r)), Place::Role::kDevice, i);
      platform->cpus_[r] = placed(z->create_host(name_of("cpu", r), kWorkUnitsPerSecond), Place::Role::kCpu, i);
    }
    // The node endpoint carries node-to-node aggregate flows across the
    // fabric only; the node switch host receives a device's aggregate
    // intra-node traffic.
    if (p.node_cores > 0) {
      // Each core runs 1e9 work units per second; an exec uses at most one.
      platform->pools_.push_back(
          placed(z->create_host(name_of("cores", k), kWorkUnitsPerSecond)->set_core_count(p.node_cores),
                 Place::Role::kCores, 0));
    }
    if (p.host.modelled()) {
      // A GPU node's host: its ranks' host work and launches share these cores.
      platform->host_pools_.push_back(
          placed(z->create_host(name_of("host", k), kWorkUnitsPerSecond)->set_core_count(p.host.cores),
                 Place::Role::kCores, 0));
    }
    platform->node_endpoints_.push_back(
        placed(z->create_host(name_of("node", k, 0), kWorkUnitsPerSecond), Place::Role::kEndpoint, 0));
    platform->node_switches_.push_back(
        placed(z->create_host(name_of("switch", k), kWorkUnitsPerSecond), Place::Role::kSwitch, 0));

    detail::NodeLinks& links = routing.nodes[k];
    for (int n = 0; n < nics; ++n) {
      links.nic_up.push_back(make_link(z, name_of("nic_up", k, n), p.nics.link.bandwidth, p.nics.link.latency));
      links.nic_down.push_back(make_link(z, name_of("nic_down", k, n), p.nics.link.bandwidth, p.nics.link.latency));
    }
    const double intra_bw = p.intra_node.link.bandwidth, intra_lat = p.intra_node.link.latency;
    const bool mesh = p.intra_node.kind == cluster::IntraNode::Kind::kFullMesh;
    // A device's whole intra-node capacity, for flow-fidelity traffic merged per device.
    const double to_node = mesh ? intra_bw * std::max(1, m - 1) : intra_bw;
    for (int i = 0; i < m; ++i) {
      const int r = first + i;
      links.nic_of.push_back(i * nics / m);  // device i's NIC: its own when there is one per device
      links.pcie_up.push_back(make_link(z, name_of("pcie_up", r), p.host_link.bandwidth, p.host_link.latency));
      links.pcie_down.push_back(make_link(z, name_of("pcie_down", r), p.host_link.bandwidth, p.host_link.latency));
      links.fabric_up.push_back(make_link(z, name_of("fabric_up", r), to_node, intra_lat / 2));
      links.fabric_down.push_back(make_link(z, name_of("fabric_down", r), to_node, intra_lat / 2));
    }
    if (mesh && m > 1) {
      links.mesh.assign(static_cast<size_t>(m) * m, nullptr);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < m; ++j) {
          if (i != j) links.mesh[i * m + j] = make_link(z, name_of("mesh", first + i, first + j), intra_bw, intra_lat);
        }
      }
    }
    // The whole node's intra-node capacity, for a uniform exchange merged per node.
    links.fabric_all = make_link(z, name_of("fabric_all", k), to_node * m, intra_lat / 2);
    if (stored) {
      for (const auto& [from, from_place] : hosts) {
        for (const auto& [to, to_place] : hosts) {
          std::vector<sg::LinkInRoute> route;
          if (from != to && routing.visit_local(from_place, to_place, [&](sg::Link* l) { route.emplace_back(l); }))
            z->add_route(from->get_netpoint(), to->get_netpoint(), nullptr, nullptr, route, false);
        }
      }
      z->seal();
      node_zones.push_back(z);
    }
    routing.node_up.push_back(make_link(root, name_of("node_up", k), node_bandwidth, p.topology.switch_link.latency));
    routing.node_down.push_back(make_link(root, name_of("node_down", k), node_bandwidth, 0));
  }

  // Aggregation levels above the nodes.
  routing.levels = detail::aggregation_levels(p, nodes, node_bandwidth);
  const detail::Levels& levels = routing.levels;
  routing.level_up.resize(levels.uplink.size());
  routing.level_down.resize(levels.uplink.size());
  for (size_t l = 0; l < levels.uplink.size(); ++l) {
    for (size_t g = 0; g < levels.uplink[l].size(); ++g) {
      const int id = static_cast<int>(l + 1) * 100000 + static_cast<int>(g);
      routing.level_up[l].push_back(
          make_link(root, name_of("up", id), levels.uplink[l][g], p.topology.switch_link.latency));
      routing.level_down[l].push_back(
          make_link(root, name_of("down", id), levels.uplink[l][g], p.topology.switch_link.latency));
    }
  }
  // One endpoint per first-level group (the whole cluster on one switch): a
  // node's share of an all-to-all bound for a group crosses the node uplink
  // and the levels up to their common ancestor, then the group's downlink.
  const int groups = levels.group_of_node.empty() ? 1 : static_cast<int>(levels.uplink[0].size());
  platform->group_of_node_.resize(nodes, 0);
  for (int a = 0; a < nodes; ++a) {
    if (!levels.group_of_node.empty()) platform->group_of_node_[a] = levels.group_of_node[0][a];
  }
  std::vector<int> group_rep(groups, 0);  // the first node of each group
  for (int a = nodes - 1; a >= 0; --a)
    group_rep[platform->group_of_node_[a]] = a;
  std::vector<sg::NetZone*> group_zones;
  for (int g = 0; g < groups; ++g) {
    if (!stored) {
      sg::Host* endpoint = root->create_host(name_of("group", g), kWorkUnitsPerSecond);
      twin->place(endpoint, Place{Place::Role::kGroup, group_rep[g], g});
      platform->group_endpoints_.push_back(endpoint);
      continue;
    }
    // In a zone of its own: SimGrid routes between zones, or between hosts of one zone.
    sg::NetZone* z = sg::create_full_zone(name_of("group_zone", g));
    z->set_parent(root);
    platform->group_endpoints_.push_back(z->create_host(name_of("group", g), kWorkUnitsPerSecond));
    z->seal();
    group_zones.push_back(z);
  }

  if (stored) {
    auto add = [&](int a, sg::NetZone* to, sg::Host* gateway, int b, bool into_b) {
      std::vector<sg::LinkInRoute> route;
      routing.visit_fabric(a, b, into_b, [&](sg::Link* link) { route.emplace_back(link); });
      root->add_route(node_zones[a]->get_netpoint(), to->get_netpoint(), platform->node_endpoints_[a]->get_netpoint(),
                      gateway->get_netpoint(), route, false);
    };
    for (int a = 0; a < nodes; ++a) {
      for (int b = 0; b < nodes; ++b) {
        if (a != b) add(a, node_zones[b], platform->node_endpoints_[b], b, true);
      }
      for (int g = 0; g < groups; ++g)
        add(a, group_zones[g], platform->group_endpoints_[g], group_rep[g], false);
    }
  } else {
    // As SimGrid's network model makes its loopback (network/loopback-bw, -lat; shared by every flow on it).
    twin->set_loopback(root->create_link("loopback", simgrid::config::get_value<double>("network/loopback-bw"))
                           ->set_latency(simgrid::config::get_value<double>("network/loopback-lat"))
                           ->set_sharing_policy(sg::Link::SharingPolicy::FATPIPE)
                           ->seal());
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
