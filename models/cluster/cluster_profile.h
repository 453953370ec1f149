#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"

namespace clustertwin::cluster {

/// One kind of accelerator (or CPU socket share, for localhost-cpu).
struct DeviceType {
  std::string name;                          // "H100-SXM5-80GB"
  std::map<std::string, double> peak_flops;  // FLOP/s per data type: "fp32", "tf32", "bf16", "fp16", "fp8", "int8"
  double memory_bytes = 0;                   // device memory capacity
  double memory_bandwidth = 0;               // bytes/s
  double compute_efficiency = 1.0;           // (0, 1]: the share of peak the roofline assumes
  double memory_efficiency = 1.0;            // (0, 1]: the share of memory bandwidth the roofline assumes
};

/// The host of a GPU node: the CPU cores its devices' ranks share for host
/// work (host and lookup tasks) and for launching device work, and what one
/// launch costs there. A plan task with `launches` > 0 is then launched by
/// its stream's host thread (launches x launch seconds on these cores) and
/// queued on its device stream, where it runs once launched and its
/// dependencies are done; the thread goes on launching (the device runs
/// behind the host, across steps) unless the task is a sync point.
struct HostSide {
  int cores = 0;      // CPU cores per node; 0: none modelled
  double launch = 0;  // host seconds per launched device operation (cudaLaunchKernel, cudaMemcpyAsync)
  bool modelled() const { return cores > 0; }
};

/// A link: bandwidth in bytes/s (per direction), latency in seconds.
struct LinkSpec {
  double bandwidth = 0;
  double latency = 0;
};

/// Devices of a node talk through a switch (NVSwitch, HCCS switch: one link
/// per device to the switch) or a full mesh (a direct link per device pair).
struct IntraNode {
  enum class Kind { kSwitch, kFullMesh };
  Kind kind = Kind::kSwitch;
  LinkSpec link;  // per device (switch) or per device pair (full mesh)
};

struct Nics {
  int per_node = 1;
  LinkSpec link;                // one NIC
  bool rail_optimized = false;  // device d of every node uses NIC d (and rail d of the fabric)
};

/// The network between nodes.
///
///   single_switch    every node on one switch
///   fat_tree         `levels` levels of switches; `nodes_per_leaf` nodes per leaf switch,
///                    `radix` children per switch above; `oversubscription` per level (1 = non-blocking)
///   rail_leaf_spine  rail-optimised: leaf d of a group of `nodes_per_leaf` nodes connects NIC d of each; spines above
///   dragonfly        groups of `routers_per_group` routers with `nodes_per_leaf` nodes each, all-to-all local
///                    links inside a group and `global_links_per_router` global links per router
struct Topology {
  enum class Kind { kSingleSwitch, kFatTree, kRailLeafSpine, kDragonfly };
  Kind kind = Kind::kSingleSwitch;
  int levels = 1;
  int nodes_per_leaf = 0;
  int radix = 0;
  std::vector<double> oversubscription;  // per level above the leaves; empty means 1 everywhere
  int routers_per_group = 0;
  int global_links_per_router = 0;
  LinkSpec switch_link;  // switch-to-switch links; bandwidth 0 means "as fast as what they carry"
};

/// The cost of a task with a cost key:
///   seconds = latency + requests x per_request + flops / flop_rate + bytes / byte_rate.
/// A rate of 0 means the term is absent. `requests` is the task's count of
/// separate requests it serves (models::Task::requests): an owner's lookup
/// that serves each requester on its own pays per_request W times.
///
/// A collective priced by its key may instead (or also) give its cost the
/// way a benchmarked network scales with its group of n (CollectiveSegment):
///   + latency_steps(op, n) x step_latency + bytes x bus_factor(op, n) / bus_rate,
/// which `clustertwin calibrate` fits, so that a cost fitted on one group
/// size predicts another. Tasks other than collectives ignore both terms.
struct CostModel {
  double latency = 0;       // seconds
  double flop_rate = 0;     // FLOP/s
  double byte_rate = 0;     // bytes/s
  double per_request = 0;   // seconds per request served
  double step_latency = 0;  // seconds per latency step (collectives)
  double bus_rate = 0;      // bus bytes/s (collectives)
  /// A collective on shared cores (ClusterProfile::node_cores): seconds per
  /// latency step its members wait off the cores once they have met (for
  /// the operating system to run their threads), measured for this key in
  /// the runs it was fitted on (calibrators/step_wait.h); before its other
  /// terms, which are CPU work. 0: the op's CollectiveFactor::step_wait.
  double step_wait = 0;
  double seconds(double flops, double bytes, double requests = 0) const;
  /// The cost of a collective `op` of `bytes` among `group_size` members.
  double collective_seconds(models::CollectiveOp op, double bytes, int group_size, double requests) const;
};

/// What a collective operation achieves on this cluster beyond the ideal
/// network: its flows carry bytes x (1 + (n - 1) / congestion_peers) / efficiency
/// for a group of n. `efficiency` is the share of link bandwidth a flow gets
/// (protocol, framing, synchronisation); `congestion_peers` models a full
/// mesh whose throughput falls as peers are added (incast, connection state):
/// with n - 1 = congestion_peers the operation takes twice as long. 0 means
/// no such effect. Both are fitted, never read off a datasheet.
///
/// Or, fitted from a real collective benchmark (calibrators/network_fit.h),
/// the operation's time itself, per message-size range as SimGrid's SMPI
/// model keeps factors per size: a collective of `bytes` (nccl-tests
/// convention) among n members takes
///   latency_steps(op, n) x step_latency + bytes x bus_factor(op, n) / bus_bandwidth
/// with the segment whose `from_bytes` is the largest not above `bytes`. A
/// fitted collective is not moved over the network: it takes that time once
/// its members meet, and efficiency and congestion_peers do not apply.
struct CollectiveSegment {
  double from_bytes = 0;     // the first segment starts at 0
  double step_latency = 0;   // seconds per latency step
  double bus_bandwidth = 0;  // bytes/s, nccl-tests' bus bandwidth
};

struct CollectiveFactor {
  double efficiency = 1.0;
  double congestion_peers = 0;
  std::vector<CollectiveSegment> fit;  // empty: moved over the network
  /// Seconds each member spends per peer it exchanges with, before the
  /// bytes flow: a collective of n members moved over the network starts
  /// (n - 1) x per_peer late (LogP's per-message overhead o, Culler et al.
  /// 1993: a direct all-to-all posts one send and one receive per peer).
  /// A fixed cost per operation, so splitting a collective into k pieces
  /// pays it k times. 0: none. Not applied to a fitted collective.
  double per_peer = 0;
  /// On shared cores (ClusterProfile::node_cores): ranks on the node -> the
  /// seconds per latency step that a collective priced by a cost key spends
  /// waiting, not computing, for the operating system to run its threads
  /// (a wake-up on busy cores). A property of the machine at that rank
  /// count, measured by a collective benchmark there (`clustertwin
  /// calibrate`: the mean time per latency step of its smallest messages,
  /// calibrators/step_wait.h); a cost key fitted with it holds the rest of
  /// the collective's time. Empty: none.
  std::map<int, double> step_wait = {};
  /// step_wait at `ranks` on the node: linear between the measured counts,
  /// the nearest measured count's outside them, 0 when none is measured.
  double step_wait_at(int ranks) const;
  /// (n - 1) x per_peer for a group of n.
  double peer_seconds(int group_size) const;
  /// The factor on the bytes of a collective of `group_size` members.
  double byte_factor(int group_size) const;
  /// The fitted time of `op` on `bytes` among `group_size` members (fit must not be empty).
  double fitted_seconds(models::CollectiveOp op, double bytes, int group_size) const;
};

/// nccl-tests' bus-bandwidth factor: all-reduce 2(n-1)/n; reduce-scatter,
/// all-gather and all-to-all (n-1)/n; broadcast and send/recv 1.
double bus_factor(models::CollectiveOp op, int n);

/// The sequential message steps of the usual algorithm for `op` among n
/// members, which the fitted step latency multiplies: ring all-reduce
/// 2(n-1); ring all-gather and reduce-scatter, pairwise all-to-all n-1;
/// binomial-tree broadcast ceil(log2 n); 0 for n = 1.
double latency_steps(models::CollectiveOp op, int n);

/// A cluster as the twin sees it; the YAML schema is sim/platforms/README.md.
struct ClusterProfile {
  std::string name;
  std::string description;
  int nodes = 1;
  int devices_per_node = 1;
  DeviceType device;  // the default device type
  std::vector<DeviceType> extra_device_types;
  std::map<int, std::string> node_device_type;  // node index -> a name in extra_device_types (mixed clusters)
  std::string default_dtype = "bf16";
  LinkSpec host_link;                // host memory <-> one device
  double host_memory_bandwidth = 0;  // bytes/s per node (embedding lookups from host DRAM)
  IntraNode intra_node;
  Nics nics;
  Topology topology;
  /// CPU cores the devices of a node share, 0 when each device computes on
  /// its own. localhost-cpu's "devices" are processes on one machine: its
  /// ranks' tasks (compute, lookups, host work, priced copies and priced
  /// collectives: all of it is CPU work there) run on the node's cores,
  /// time-shared when more are busy than there are cores, and their costs
  /// are core-seconds.
  int node_cores = 0;
  /// The host side of a GPU node (absent: host work runs on a host of its
  /// own per device, launches cost nothing).
  HostSide host;
  std::map<int, double> slowdown;          // device (global rank) -> factor >= 1 (stragglers)
  std::map<std::string, CostModel> costs;  // cost key -> cost
  /// Collective op name (models::collective_op_name: "alltoall", ...) -> its factor.
  std::map<std::string, CollectiveFactor> collectives;
  /// A SimGrid XML platform that replaces the network built from this
  /// profile ("" for none): its hosts, in file order, are the workers, each
  /// its own node. Set by load_cluster_profile for a path ending in .xml.
  std::string simgrid_platform;

  int devices() const { return nodes * devices_per_node; }
  /// The CPU cores of a node: node_cores (ranks that are CPU processes) or a GPU node's host.cores; 0 for neither.
  int cpu_cores() const { return node_cores > 0 ? node_cores : host.cores; }
  /// The device type of global device `rank`.
  const DeviceType& device_type_of(int rank) const;
  /// The slowdown factor of device `rank` (1 when absent).
  double slowdown_of(int rank) const;
  /// `op`'s benchmarked time (collectives.OP with a non-empty fit), or null
  /// when the network's links price it.
  const CollectiveFactor* fitted_collective(models::CollectiveOp op) const;
};

/// Parses a profile from YAML text; `name` (the file) prefixes errors, which
/// name the field and the value: "h100.yaml: field 'nics.bandwidth': -5 must be > 0".
StatusOr<ClusterProfile> parse_cluster_profile(const std::string& yaml_text, const std::string& name);

/// Reads a profile file.
StatusOr<ClusterProfile> read_cluster_profile(const std::string& path);

/// A shipped profile by name ("npu-1536", "gpu-128", "h100-1024", "localhost-cpu"), or a path to a YAML file.
StatusOr<ClusterProfile> load_cluster_profile(const std::string& name_or_path);

/// The names of the shipped profiles.
std::vector<std::string> shipped_profile_names();

/// Checks that `workers` fits the profile: at least 1, a multiple of
/// devices_per_node (or fewer than one node's devices), at most devices().
/// InvalidArgument naming the field: "workers 12: not a multiple of ...".
Status check_worker_count(const ClusterProfile& profile, int workers);

/// Checks what relates fields to each other, for a profile parsed or built in
/// code: node and device indices in range, device type names known and
/// unique, default_dtype rated on every device type, NICs one per device when
/// rail-optimised, topology parameters consistent and large enough for
/// `nodes`. `name` prefixes errors. parse_cluster_profile calls it; the form
/// and range of each single value is checked while parsing.
Status validate_cluster_profile(const ClusterProfile& profile, const std::string& name);

/// The most nodes `topology` can hold: nodes_per_leaf * radix^(levels-1) for
/// fat_tree and rail_leaf_spine, (routers_per_group * global_links_per_router + 1)
/// groups of routers_per_group * nodes_per_leaf nodes for dragonfly, unlimited
/// (INT64_MAX) for single_switch. Saturates at INT64_MAX.
int64_t topology_capacity(const Topology& topology);

/// "single_switch", "fat_tree", "rail_leaf_spine", "dragonfly": the YAML spelling.
std::string_view topology_kind_name(Topology::Kind kind);

}  // namespace clustertwin::cluster
