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

// The hosts of a built platform, moved into it once its fabric is complete.
struct BuiltHosts {
  std::vector<sg::Host*> devices, cpus, pools, host_pools, node_endpoints, node_switches, group_endpoints;
  std::vector<int> group_of_node;
};

// The hosts, links and zones of a cluster profile for a number of workers
// (Platform::build): each node's hosts, links and local routes, then the
// aggregation levels above the nodes, the group endpoints and the routes
// between nodes.
//
// Computed routes: one zone holds everything. Stored: a full zone per node
// (its endpoint the gateway) under a full root zone with a route per node pair.
class FabricBuilder {
 public:
  FabricBuilder(const cluster::ClusterProfile& p, int workers, int devices_per_node, bool stored)
      : p_(p),
        workers_(workers),
        m_(devices_per_node),
        nodes_((workers + m_ - 1) / m_),
        nics_(std::max(1, std::min(p.nics.per_node, m_))),
        node_bandwidth_(nics_ * p.nics.link.bandwidth),
        stored_(stored),
        twin_(stored ? nullptr : new detail::TwinZone("cluster")),  // SimGrid owns zones
        root_(stored ? sg::create_full_zone("cluster") : twin_->get_iface()),
        routing_(stored ? local_routing_ : twin_->routing()) {}

  BuiltHosts build() {
    routing_.nodes.resize(nodes_);
    built_.devices.resize(workers_);
    built_.cpus.resize(workers_);
    for (int k = 0; k < nodes_; ++k)
      add_node(k);
    add_levels();
    add_groups();
    if (stored_) {
      store_routes_between_nodes();
    } else {
      add_loopback();
    }
    root_->seal();
    return std::move(built_);
  }

 private:
  using PlacedHosts = std::vector<std::pair<sg::Host*, Place>>;

  void add_node(int k) {
    sg::NetZone* z = root_;
    if (stored_) {
      z = sg::create_full_zone(name_of("node", k));
      z->set_parent(root_);
    }
    const PlacedHosts hosts = add_node_hosts(k, z);
    add_node_links(k, z);
    if (stored_) {
      store_node_routes(z, hosts);
      z->seal();
      node_zones_.push_back(z);
    }
    routing_.node_up.push_back(
        make_link(root_, name_of("node_up", k), node_bandwidth_, p_.topology.switch_link.latency));
    routing_.node_down.push_back(make_link(root_, name_of("node_down", k), node_bandwidth_, 0));
  }

  // Node k's hosts, placed in the computed zone; returned for the stored routes.
  PlacedHosts add_node_hosts(int k, sg::NetZone* z) {
    PlacedHosts hosts;
    auto placed = [&](sg::Host* host, Place::Role role, int index) {
      hosts.emplace_back(host, Place{role, k, index});
      if (!stored_) twin_->place(host, hosts.back().second);
      return host;
    };
    const int first = k * m_;
    for (int i = 0; i < m_; ++i) {
      const int r = first + i;
      built_.devices[r] =
          placed(z->create_host(name_of("dev", r), kWorkUnitsPerSecond / p_.slowdown_of(r)), Place::Role::kDevice, i);
      built_.cpus[r] = placed(z->create_host(name_of("cpu", r), kWorkUnitsPerSecond), Place::Role::kCpu, i);
    }
    // The node endpoint carries node-to-node aggregate flows across the
    // fabric only; the node switch host receives a device's aggregate
    // intra-node traffic.
    if (p_.node_cores > 0) {
      // Each core runs 1e9 work units per second; an exec uses at most one.
      built_.pools.push_back(
          placed(z->create_host(name_of("cores", k), kWorkUnitsPerSecond)->set_core_count(p_.node_cores),
                 Place::Role::kCores, 0));
    }
    if (p_.host.modelled()) {
      // A GPU node's host: its ranks' host work and launches share these cores.
      built_.host_pools.push_back(
          placed(z->create_host(name_of("host", k), kWorkUnitsPerSecond)->set_core_count(p_.host.cores),
                 Place::Role::kCores, 0));
    }
    built_.node_endpoints.push_back(
        placed(z->create_host(name_of("node", k, 0), kWorkUnitsPerSecond), Place::Role::kEndpoint, 0));
    built_.node_switches.push_back(
        placed(z->create_host(name_of("switch", k), kWorkUnitsPerSecond), Place::Role::kSwitch, 0));
    return hosts;
  }

  // Node k's NICs, host links, intra-node fabric and mesh.
  void add_node_links(int k, sg::NetZone* z) {
    const int first = k * m_;
    detail::NodeLinks& links = routing_.nodes[k];
    for (int n = 0; n < nics_; ++n) {
      links.nic_up.push_back(make_link(z, name_of("nic_up", k, n), p_.nics.link.bandwidth, p_.nics.link.latency));
      links.nic_down.push_back(make_link(z, name_of("nic_down", k, n), p_.nics.link.bandwidth, p_.nics.link.latency));
    }
    const double intra_bw = p_.intra_node.link.bandwidth, intra_lat = p_.intra_node.link.latency;
    const bool mesh = p_.intra_node.kind == cluster::IntraNode::Kind::kFullMesh;
    // A device's whole intra-node capacity, for flow-fidelity traffic merged per device.
    const double to_node = mesh ? intra_bw * std::max(1, m_ - 1) : intra_bw;
    for (int i = 0; i < m_; ++i) {
      const int r = first + i;
      links.nic_of.push_back(i * nics_ / m_);  // device i's NIC: its own when there is one per device
      links.pcie_up.push_back(make_link(z, name_of("pcie_up", r), p_.host_link.bandwidth, p_.host_link.latency));
      links.pcie_down.push_back(make_link(z, name_of("pcie_down", r), p_.host_link.bandwidth, p_.host_link.latency));
      links.fabric_up.push_back(make_link(z, name_of("fabric_up", r), to_node, intra_lat / 2));
      links.fabric_down.push_back(make_link(z, name_of("fabric_down", r), to_node, intra_lat / 2));
    }
    if (mesh && m_ > 1) {
      links.mesh.assign(static_cast<size_t>(m_) * m_, nullptr);
      for (int i = 0; i < m_; ++i) {
        for (int j = 0; j < m_; ++j) {
          if (i != j) links.mesh[i * m_ + j] = make_link(z, name_of("mesh", first + i, first + j), intra_bw, intra_lat);
        }
      }
    }
    // The whole node's intra-node capacity, for a uniform exchange merged per node.
    links.fabric_all = make_link(z, name_of("fabric_all", k), to_node * m_, intra_lat / 2);
  }

  // Stored routes: every pair of a node's hosts, in its zone.
  void store_node_routes(sg::NetZone* z, const PlacedHosts& hosts) {
    for (const auto& [from, from_place] : hosts) {
      for (const auto& [to, to_place] : hosts) {
        std::vector<sg::LinkInRoute> route;
        if (from != to && routing_.visit_local(from_place, to_place, [&](sg::Link* l) { route.emplace_back(l); }))
          z->add_route(from->get_netpoint(), to->get_netpoint(), nullptr, nullptr, route, false);
      }
    }
  }

  // Aggregation levels above the nodes.
  void add_levels() {
    routing_.levels = detail::aggregation_levels(p_, nodes_, node_bandwidth_);
    const detail::Levels& levels = routing_.levels;
    routing_.level_up.resize(levels.uplink.size());
    routing_.level_down.resize(levels.uplink.size());
    for (size_t l = 0; l < levels.uplink.size(); ++l) {
      for (size_t g = 0; g < levels.uplink[l].size(); ++g) {
        const int id = static_cast<int>(l + 1) * 100000 + static_cast<int>(g);
        routing_.level_up[l].push_back(
            make_link(root_, name_of("up", id), levels.uplink[l][g], p_.topology.switch_link.latency));
        routing_.level_down[l].push_back(
            make_link(root_, name_of("down", id), levels.uplink[l][g], p_.topology.switch_link.latency));
      }
    }
  }

  // One endpoint per first-level group (the whole cluster on one switch): a
  // node's share of an all-to-all bound for a group crosses the node uplink
  // and the levels up to their common ancestor, then the group's downlink.
  void add_groups() {
    const detail::Levels& levels = routing_.levels;
    groups_ = levels.group_of_node.empty() ? 1 : static_cast<int>(levels.uplink[0].size());
    built_.group_of_node.resize(nodes_, 0);
    for (int a = 0; a < nodes_; ++a) {
      if (!levels.group_of_node.empty()) built_.group_of_node[a] = levels.group_of_node[0][a];
    }
    group_rep_.assign(groups_, 0);  // the first node of each group
    for (int a = nodes_ - 1; a >= 0; --a)
      group_rep_[built_.group_of_node[a]] = a;
    for (int g = 0; g < groups_; ++g) {
      if (!stored_) {
        sg::Host* endpoint = root_->create_host(name_of("group", g), kWorkUnitsPerSecond);
        twin_->place(endpoint, Place{Place::Role::kGroup, group_rep_[g], g});
        built_.group_endpoints.push_back(endpoint);
        continue;
      }
      // In a zone of its own: SimGrid routes between zones, or between hosts of one zone.
      sg::NetZone* z = sg::create_full_zone(name_of("group_zone", g));
      z->set_parent(root_);
      built_.group_endpoints.push_back(z->create_host(name_of("group", g), kWorkUnitsPerSecond));
      z->seal();
      group_zones_.push_back(z);
    }
  }

  // Stored routes: from every node to every other node and to every group, in the root zone.
  void store_routes_between_nodes() {
    auto add = [&](int a, sg::NetZone* to, sg::Host* gateway, int b, bool into_b) {
      std::vector<sg::LinkInRoute> route;
      routing_.visit_fabric(a, b, into_b, [&](sg::Link* link) { route.emplace_back(link); });
      root_->add_route(node_zones_[a]->get_netpoint(), to->get_netpoint(), built_.node_endpoints[a]->get_netpoint(),
                       gateway->get_netpoint(), route, false);
    };
    for (int a = 0; a < nodes_; ++a) {
      for (int b = 0; b < nodes_; ++b) {
        if (a != b) add(a, node_zones_[b], built_.node_endpoints[b], b, true);
      }
      for (int g = 0; g < groups_; ++g)
        add(a, group_zones_[g], built_.group_endpoints[g], group_rep_[g], false);
    }
  }

  // As SimGrid's network model makes its loopback (network/loopback-bw, -lat; shared by every flow on it).
  void add_loopback() {
    twin_->set_loopback(root_->create_link("loopback", simgrid::config::get_value<double>("network/loopback-bw"))
                            ->set_latency(simgrid::config::get_value<double>("network/loopback-lat"))
                            ->set_sharing_policy(sg::Link::SharingPolicy::FATPIPE)
                            ->seal());
  }

  const cluster::ClusterProfile& p_;
  const int workers_;
  const int m_;  // devices per node
  const int nodes_;
  const int nics_;  // per node
  const double node_bandwidth_;
  const bool stored_;
  detail::TwinZone* twin_;  // computed routes only
  sg::NetZone* root_;
  Routing local_routing_;  // stored routes': only while building
  Routing& routing_;
  std::vector<sg::NetZone*> node_zones_, group_zones_;  // stored routes only
  int groups_ = 1;
  std::vector<int> group_rep_;
  BuiltHosts built_;
};

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
    return Status::invalid_argument("workers " + std::to_string(workers) + ": platform file '" +
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
  BuiltHosts built = FabricBuilder(profile, workers, platform->devices_per_node_, routes == Routes::kStored).build();
  platform->devices_ = std::move(built.devices);
  platform->cpus_ = std::move(built.cpus);
  platform->pools_ = std::move(built.pools);
  platform->host_pools_ = std::move(built.host_pools);
  platform->node_endpoints_ = std::move(built.node_endpoints);
  platform->node_switches_ = std::move(built.node_switches);
  platform->group_endpoints_ = std::move(built.group_endpoints);
  platform->group_of_node_ = std::move(built.group_of_node);
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
