#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace simgrid::s4u {
class Host;
class Mailbox;
class Engine;
}  // namespace simgrid::s4u

namespace clustertwin::sim {

class ActorPool;
class LinkTally;

/// The SimGrid platform of a cluster profile for a given number of workers.
/// Every SimGrid platform call of the twin lives in platform.cpp and the
/// routing it builds (platform_routing.h, twin_zone.h), so that SimGrid 4's
/// renamed zone API touches those files alone.
///
/// The model, per node:
///
///            (to the fabric: node uplink = NICs x NIC bandwidth)
///                           |
///     cpu0   cpu1      node endpoint (where routes leave the node; flow-fidelity node-to-node traffic)
///      |pcie  |pcie      /    |
///     dev0 --------- dev1       nic0, nic1 (one NIC per device when rail-optimised)
///        | (switch or mesh) |
///          node switch host (flow-fidelity traffic of a device to its whole node)
///
/// and between nodes a tree of aggregate links (a fluid fat tree: each level's
/// uplink carries the sum of what it aggregates divided by the level's
/// oversubscription). One zone holds every host and computes each route when
/// SimGrid asks for it (a route between nodes runs through both node
/// endpoints), so that building grows with the nodes, not their pairs
/// (Routes::kStored builds a full zone per node and stores one route per
/// node pair instead, as the twin did before). A flow's
/// bandwidth is the max-min share of every link on its route (SimGrid's CM02
/// model without TCP window or cross-traffic effects, so that closed forms
/// hold exactly until the calibrators add factors).
class Platform {
 public:
  /// How the routes between nodes are kept: computed on demand (the
  /// default; set-up time and memory grow with the nodes), or stored, one per
  /// node pair as a SimGrid full zone does (quadratic: 10 s and 300 MB at
  /// 1,536 nodes), the reference the tests hold the computed routes to.
  enum class Routes { kComputed, kStored };

  /// Builds the platform of the first `workers` devices of `profile` in the
  /// current SimGrid engine, or loads profile.simgrid_platform when set (its
  /// hosts in file order are the workers, each its own node, with no node
  /// aggregates). InvalidArgument when the worker count does not fit.
  static StatusOr<std::unique_ptr<Platform>> build(const cluster::ClusterProfile& profile, int workers,
                                                   Routes routes = Routes::kComputed);
  ~Platform();

  /// A view of this platform for one job of a mix: `workers` ranks, rank r
  /// on device r % d of node nodes[r / d] (d = min(workers, devices per
  /// node)), with `profile` (the job's: its device types and slowdowns by the
  /// job's own ranks and nodes). The view shares this platform's hosts and
  /// links, so that jobs on one engine share the fabric; it has its own
  /// mailboxes (named with `name`) and actor pool. Node, group and endpoint
  /// indices stay the whole platform's. InvalidArgument when the nodes do not
  /// hold the workers, repeat, or lie outside this platform, or on a
  /// platform file (no nodes to place on). Must not outlive this platform.
  StatusOr<std::unique_ptr<Platform>> place(const cluster::ClusterProfile& profile, const std::vector<int>& nodes,
                                            int workers, const std::string& name) const;

  int workers() const { return workers_; }
  int devices_per_node() const { return devices_per_node_; }
  int nodes() const { return static_cast<int>(node_endpoints_.size()); }
  /// The node of `rank`: rank / devices_per_node, or where a placed view put it.
  int node_of(int rank) const { return node_of_rank_.empty() ? rank / devices_per_node_ : node_of_rank_[rank]; }
  const cluster::ClusterProfile& profile() const { return profile_; }

  /// The device of `rank`: compute runs here; its speed is 1e9 work units per
  /// second divided by the device's slowdown.
  simgrid::s4u::Host* device(int rank) const { return devices_[rank]; }
  /// The host side of `rank`: lookups and host work run here; copies cross the host link.
  simgrid::s4u::Host* cpu(int rank) const { return cpus_[rank]; }
  /// The node's shared cores where the profile has node_cores (tasks of
  /// every rank of the node run there, time-shared), else nullptr.
  simgrid::s4u::Host* core_pool(int rank) const { return pools_.empty() ? nullptr : pools_[node_of(rank)]; }
  /// A GPU node's host cores where the profile has a `host` (the node's
  /// ranks' host work, lookups and launches run there, time-shared), else nullptr.
  simgrid::s4u::Host* host_pool(int rank) const { return host_pools_.empty() ? nullptr : host_pools_[node_of(rank)]; }
  /// The aggregate endpoint of `node`, for flow-fidelity traffic between whole nodes.
  simgrid::s4u::Host* node_endpoint(int node) const { return node_endpoints_[node]; }
  /// The first-level switch group of `node` (0 for all nodes on one switch),
  /// and the endpoint that receives a flow-fidelity all-to-all's traffic
  /// bound for a whole group (no group endpoints on a platform file).
  int group_count() const { return static_cast<int>(group_endpoints_.size()); }
  int group_of_node(int node) const { return group_of_node_[node]; }
  simgrid::s4u::Host* group_endpoint(int group) const { return group_endpoints_[group]; }
  /// Exchanges among more nodes than this are merged per (node, group) instead of per node pair.
  int group_merge_min_nodes() const { return group_merge_min_nodes_; }
  void set_group_merge_min_nodes(int nodes) { group_merge_min_nodes_ = nodes; }

  /// Where a device's flow-fidelity traffic to the rest of its node goes (through its fabric link).
  simgrid::s4u::Host* node_switch(int node) const { return node_switches_[node]; }

  /// Whether node endpoints and switches exist (not on a SimGrid platform file).
  bool has_node_aggregates() const { return !node_endpoints_.empty(); }
  /// The exec amount that keeps `rank`'s device busy for `seconds` at slowdown 1.
  double work_units(int rank, double seconds) const;

  /// One-way route latency between two hosts, seconds (cached).
  double latency(simgrid::s4u::Host* from, simgrid::s4u::Host* to);

  /// A mailbox no pending flow uses; hand it back with give_mailbox when its flow is done.
  simgrid::s4u::Mailbox* take_mailbox();
  void give_mailbox(simgrid::s4u::Mailbox* mailbox) { free_mailboxes_.push_back(mailbox); }

  /// Where the network flows of collectives are counted per link (nullptr: not counted; sim mix counts).
  LinkTally* link_tally() const { return link_tally_; }
  void set_link_tally(LinkTally* tally) { link_tally_ = tally; }

  /// Actors for short concurrent work (a collective's senders and receivers), reused.
  ActorPool& actor_pool() { return *actor_pool_; }

 private:
  Platform(const cluster::ClusterProfile& profile, int workers);
  static StatusOr<std::unique_ptr<Platform>> load_xml(const cluster::ClusterProfile& profile, int workers);

  cluster::ClusterProfile profile_;
  int workers_;
  int devices_per_node_;
  std::vector<simgrid::s4u::Host*> devices_;
  std::vector<simgrid::s4u::Host*> cpus_;
  std::vector<simgrid::s4u::Host*> pools_;       // per node, when node_cores > 0
  std::vector<simgrid::s4u::Host*> host_pools_;  // per node, when the profile has a GPU node's host
  std::vector<simgrid::s4u::Host*> node_endpoints_;
  std::vector<simgrid::s4u::Host*> node_switches_;
  std::vector<simgrid::s4u::Host*> group_endpoints_;
  std::vector<int> group_of_node_;
  int group_merge_min_nodes_ = 32;
  std::map<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>, double> latency_cache_;
  std::vector<simgrid::s4u::Mailbox*> free_mailboxes_;
  int mailboxes_created_ = 0;
  std::string mailbox_prefix_ = "flow";  // a placed view's own, so that jobs never share a mailbox
  std::vector<int> node_of_rank_;        // a placed view's; empty: rank / devices_per_node_
  LinkTally* link_tally_ = nullptr;
  std::unique_ptr<ActorPool> actor_pool_;
};

/// Work units per second of a device at slowdown 1: a task of d seconds is d * 1e9 units.
inline constexpr double kWorkUnitsPerSecond = 1e9;

/// Sets the SimGrid network model the twin uses (call before building a platform).
void configure_engine_for_twin();

/// Above this many workers a twin's actors run without stack guard pages
/// (TwinEngine's `stack_guards`): a guard page splits its stack's memory
/// mapping in two, and with an actor per worker for its stream and one per
/// host for its flows, 16,384 workers ran past Linux's default limit of
/// 65,530 mappings per process (SimGrid aborts: "Failed to protect stack").
inline constexpr int kStackGuardMaxWorkers = 8192;

/// The SimGrid engine of one twin run (in a child process of
/// sim/core/isolated.h: one engine per process), SimGrid's own logging
/// off, actor stacks of 256 KiB (each with a guard page that turns an
/// overflow into a crash, unless `stack_guards` is false),
/// configure_engine_for_twin applied.
class TwinEngine {
 public:
  explicit TwinEngine(bool stack_guards = true);
  ~TwinEngine();
  TwinEngine(const TwinEngine&) = delete;
  TwinEngine& operator=(const TwinEngine&) = delete;
  simgrid::s4u::Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<simgrid::s4u::Engine> engine_;
};

}  // namespace clustertwin::sim
