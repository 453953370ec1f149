// What a cluster profile means beyond its fields: the relations between them
// (validate_cluster_profile), the lookups the twin makes per device, worker
// counts, and finding a profile by name among the shipped ones.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <limits>
#include <set>

#include "common/check.h"
#include "common/file_io.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/embedded_profiles.h"

namespace clustertwin::cluster {
namespace {

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

// Collects the first error of a validation: "NAME: field 'PATH': MESSAGE".
class Checker {
 public:
  explicit Checker(const std::string& name) : name_(name) {}

  void fail(const std::string& path, const std::string& message) {
    if (status_.is_ok()) status_ = Status::invalid_argument(name_ + ": field '" + path + "': " + message);
  }
  void at_least(const std::string& path, double value, double minimum, std::string_view why = "") {
    if (!(value >= minimum)) fail(path, number_text(value) + " must be >= " + number_text(minimum) + std::string(why));
  }
  void positive(const std::string& path, double value) {
    if (!(value > 0)) fail(path, number_text(value) + " must be > 0");
  }
  void in_unit_interval(const std::string& path, double value) {
    if (!(value > 0 && value <= 1)) fail(path, number_text(value) + " must be in (0, 1]");
  }
  void link(const std::string& path, const LinkSpec& link, bool zero_bandwidth_allowed) {
    if (zero_bandwidth_allowed) {
      at_least(path + ".bandwidth", link.bandwidth, 0);
    } else {
      positive(path + ".bandwidth", link.bandwidth);
    }
    at_least(path + ".latency", link.latency, 0);
  }
  const Status& status() const { return status_; }

 private:
  std::string name_;
  Status status_;
};

void check_device_type(Checker& check, const std::string& path, const DeviceType& type, const std::string& dtype) {
  if (type.name.empty()) check.fail(path + ".name", "a device type needs a name");
  for (const auto& [data_type, rate] : type.peak_flops)
    check.positive(path + ".peak_flops." + data_type, rate);
  if (type.peak_flops.count(dtype) == 0) {
    check.fail(path + ".peak_flops", "device type '" + type.name + "' has no rate for default_dtype '" + dtype + "'");
  }
  check.positive(path + ".memory", type.memory_bytes);
  check.positive(path + ".memory_bandwidth", type.memory_bandwidth);
  check.in_unit_interval(path + ".compute_efficiency", type.compute_efficiency);
  check.in_unit_interval(path + ".memory_efficiency", type.memory_efficiency);
}

void check_devices(Checker& check, const ClusterProfile& profile) {
  check_device_type(check, "device", profile.device, profile.default_dtype);
  std::set<std::string> names = {profile.device.name};
  std::string known = profile.device.name;
  for (size_t i = 0; i < profile.extra_device_types.size(); ++i) {
    const DeviceType& type = profile.extra_device_types[i];
    const std::string path = "device_types[" + std::to_string(i) + "]";
    check_device_type(check, path, type, profile.default_dtype);
    if (!names.insert(type.name).second) check.fail(path + ".name", "device type '" + type.name + "' is defined twice");
    known += ", " + type.name;
  }
  for (const auto& [node, type] : profile.node_device_type) {
    const std::string path = "node_device_type." + std::to_string(node);
    if (node < 0 || node >= profile.nodes) {
      check.fail(path, "node " + std::to_string(node) + " is out of range (the profile has " +
                           std::to_string(profile.nodes) + " nodes: 0.." + std::to_string(profile.nodes - 1) + ")");
    }
    if (names.count(type) == 0) check.fail(path, "unknown device type '" + type + "' (known: " + known + ")");
  }
  for (const auto& [rank, factor] : profile.slowdown) {
    const std::string path = "slowdown." + std::to_string(rank);
    if (rank < 0 || rank >= profile.devices()) {
      check.fail(path, "device " + std::to_string(rank) + " is out of range (the profile has " +
                           std::to_string(profile.devices()) + " devices: 0.." + std::to_string(profile.devices() - 1) +
                           ")");
    }
    check.at_least(path, factor, 1);
  }
}

void check_topology(Checker& check, const ClusterProfile& profile) {
  const Topology& topology = profile.topology;
  const std::string kind(topology_kind_name(topology.kind));
  const Nics& nics = profile.nics;
  check.at_least("nics.per_node", nics.per_node, 1);
  if (topology.kind == Topology::Kind::kRailLeafSpine && !nics.rail_optimized) {
    check.fail("nics.rail_optimized", "must be true for topology 'rail_leaf_spine' (device d uses NIC d on rail d)");
  }
  if (nics.rail_optimized && nics.per_node != profile.devices_per_node) {
    check.fail("nics.per_node", std::to_string(nics.per_node) + " must equal devices_per_node " +
                                    std::to_string(profile.devices_per_node) +
                                    " when rail_optimized is true (device d uses NIC d)");
  }
  switch (topology.kind) {
    case Topology::Kind::kSingleSwitch:
      break;
    case Topology::Kind::kFatTree:
    case Topology::Kind::kRailLeafSpine:
      check.at_least("topology.levels", topology.levels, 1);
      check.at_least("topology.nodes_per_leaf", topology.nodes_per_leaf, 1);
      if (topology.levels > 1) check.at_least("topology.radix", topology.radix, 2, " when levels > 1");
      if (!topology.oversubscription.empty() &&
          topology.oversubscription.size() != static_cast<size_t>(topology.levels - 1)) {
        check.fail("topology.oversubscription", std::to_string(topology.oversubscription.size()) + " values for " +
                                                    std::to_string(topology.levels - 1) +
                                                    (topology.levels == 2 ? " level" : " levels") +
                                                    " above the leaves");
      }
      for (size_t i = 0; i < topology.oversubscription.size(); ++i) {
        check.at_least("topology.oversubscription[" + std::to_string(i) + "]", topology.oversubscription[i], 1);
      }
      break;
    case Topology::Kind::kDragonfly:
      check.at_least("topology.nodes_per_leaf", topology.nodes_per_leaf, 1);
      check.at_least("topology.routers_per_group", topology.routers_per_group, 1);
      check.at_least("topology.global_links_per_router", topology.global_links_per_router, 1);
      break;
  }
  check.link("topology.switch_link", topology.switch_link, /*zero_bandwidth_allowed=*/true);
  if (!check.status().is_ok()) return;  // the capacity of an inconsistent topology means nothing
  const int64_t capacity = topology_capacity(topology);
  if (capacity >= profile.nodes) return;
  std::string shape;
  if (topology.kind == Topology::Kind::kDragonfly) {
    shape = "a dragonfly with nodes_per_leaf " + std::to_string(topology.nodes_per_leaf) + ", routers_per_group " +
            std::to_string(topology.routers_per_group) + " and global_links_per_router " +
            std::to_string(topology.global_links_per_router);
  } else {
    shape = "a " + kind + " of " + std::to_string(topology.levels) + " level" + (topology.levels > 1 ? "s" : "") +
            " with nodes_per_leaf " + std::to_string(topology.nodes_per_leaf) +
            (topology.levels > 1 ? " and radix " + std::to_string(topology.radix) : "");
  }
  check.fail("topology", shape + " holds at most " + std::to_string(capacity) + " nodes, fewer than nodes " +
                             std::to_string(profile.nodes));
}

int64_t saturating_multiply(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return std::numeric_limits<int64_t>::max();
  return a * b;
}

}  // namespace

double CostModel::seconds(double flops, double bytes, double requests) const {
  double total = latency + requests * per_request;
  if (flop_rate > 0) total += flops / flop_rate;
  if (byte_rate > 0) total += bytes / byte_rate;
  return total;
}

double CostModel::collective_seconds(models::CollectiveOp op, double bytes, int group_size, double requests) const {
  double total = seconds(0, bytes, requests) + latency_steps(op, group_size) * step_latency;
  if (bus_rate > 0) total += bytes * bus_factor(op, group_size) / bus_rate;
  return total;
}

double CollectiveFactor::peer_seconds(int group_size) const {
  return std::max(0, group_size - 1) * per_peer;
}

double CollectiveFactor::step_wait_at(int ranks) const {
  if (step_wait.empty()) return 0;
  auto above = step_wait.lower_bound(ranks);
  if (above == step_wait.end()) return std::prev(above)->second;
  if (above->first == ranks || above == step_wait.begin()) return above->second;
  auto below = std::prev(above);
  const double t = static_cast<double>(ranks - below->first) / (above->first - below->first);
  return below->second + t * (above->second - below->second);
}

double CollectiveFactor::byte_factor(int group_size) const {
  const double congestion = congestion_peers > 0 ? 1.0 + std::max(0, group_size - 1) / congestion_peers : 1.0;
  return congestion / efficiency;
}

double bus_factor(models::CollectiveOp op, int n) {
  const double nd = n;
  switch (op) {
    case models::CollectiveOp::kAllReduce:
      return 2.0 * (nd - 1) / nd;
    case models::CollectiveOp::kReduceScatter:
    case models::CollectiveOp::kAllGather:
    case models::CollectiveOp::kAllToAll:
      return (nd - 1) / nd;
    case models::CollectiveOp::kBroadcast:
    case models::CollectiveOp::kSend:
    case models::CollectiveOp::kRecv:
      return 1.0;
  }
  return 1.0;
}

double latency_steps(models::CollectiveOp op, int n) {
  if (n <= 1) return 0;
  switch (op) {
    case models::CollectiveOp::kAllReduce:
      return 2.0 * (n - 1);
    case models::CollectiveOp::kReduceScatter:
    case models::CollectiveOp::kAllGather:
    case models::CollectiveOp::kAllToAll:
      return n - 1;
    case models::CollectiveOp::kBroadcast:
      return std::ceil(std::log2(static_cast<double>(n)));
    case models::CollectiveOp::kSend:
    case models::CollectiveOp::kRecv:
      return 1;
  }
  return 1;
}

double CollectiveFactor::fitted_seconds(models::CollectiveOp op, double bytes, int group_size) const {
  CT_CHECK(!fit.empty()) << "fitted_seconds on a collective without a fit";
  const CollectiveSegment* s = &fit.front();
  for (const CollectiveSegment& segment : fit) {
    if (segment.from_bytes <= bytes) s = &segment;
  }
  return latency_steps(op, group_size) * s->step_latency + bytes * bus_factor(op, group_size) / s->bus_bandwidth;
}

const CollectiveFactor* ClusterProfile::fitted_collective(models::CollectiveOp op) const {
  auto f = collectives.find(std::string(models::collective_op_name(op)));
  return f != collectives.end() && !f->second.fit.empty() ? &f->second : nullptr;
}

const DeviceType& ClusterProfile::device_type_of(int rank) const {
  CT_CHECK(rank >= 0 && rank < devices())
      << "device " << rank << " of profile '" << name << "' with " << devices() << " devices";
  const auto entry = node_device_type.find(rank / devices_per_node);
  if (entry == node_device_type.end()) return device;
  for (const DeviceType& type : extra_device_types) {
    if (type.name == entry->second) return type;
  }
  CT_CHECK(entry->second == device.name) << "profile '" << name << "' names device type '" << entry->second
                                         << "' that it does not define; validate_cluster_profile rejects that";
  return device;
}

double ClusterProfile::slowdown_of(int rank) const {
  const auto entry = slowdown.find(rank);
  return entry == slowdown.end() ? 1.0 : entry->second;
}

std::string_view topology_kind_name(Topology::Kind kind) {
  switch (kind) {
    case Topology::Kind::kSingleSwitch:
      return "single_switch";
    case Topology::Kind::kFatTree:
      return "fat_tree";
    case Topology::Kind::kRailLeafSpine:
      return "rail_leaf_spine";
    case Topology::Kind::kDragonfly:
      return "dragonfly";
  }
  return "unknown";
}

int64_t topology_capacity(const Topology& topology) {
  switch (topology.kind) {
    case Topology::Kind::kSingleSwitch:
      return std::numeric_limits<int64_t>::max();
    case Topology::Kind::kFatTree:
    case Topology::Kind::kRailLeafSpine: {
      int64_t capacity = std::max(topology.nodes_per_leaf, 0);
      for (int level = 1; level < topology.levels; ++level)
        capacity = saturating_multiply(capacity, topology.radix);
      return capacity;
    }
    case Topology::Kind::kDragonfly: {
      // A canonical dragonfly: every group has one global link to every other,
      // so a group of a routers with h global links each reaches a*h others.
      const int64_t routers = std::max(topology.routers_per_group, 0);
      const int64_t groups = saturating_multiply(routers, std::max(topology.global_links_per_router, 0)) + 1;
      return saturating_multiply(saturating_multiply(groups, routers), std::max(topology.nodes_per_leaf, 0));
    }
  }
  return 0;
}

Status validate_cluster_profile(const ClusterProfile& profile, const std::string& name) {
  Checker check(name);
  check.at_least("nodes", profile.nodes, 1);
  check.at_least("devices_per_node", profile.devices_per_node, 1);
  if (!check.status().is_ok()) return check.status();
  check_devices(check, profile);
  check.link("host_link", profile.host_link, /*zero_bandwidth_allowed=*/false);
  check.positive("host_memory_bandwidth", profile.host_memory_bandwidth);
  if (profile.devices_per_node > 1) check.link("intra_node", profile.intra_node.link, false);
  check.link("nics", profile.nics.link, false);
  check_topology(check, profile);
  for (const auto& [key, cost] : profile.costs) {
    check.at_least("costs." + key + ".latency", cost.latency, 0);
    check.at_least("costs." + key + ".flop_rate", cost.flop_rate, 0);
    check.at_least("costs." + key + ".byte_rate", cost.byte_rate, 0);
  }
  return check.status();
}

Status check_worker_count(const ClusterProfile& profile, int workers) {
  const std::string field = "workers " + std::to_string(workers) + ": ";
  if (workers < 1) return Status::invalid_argument(field + "must be at least 1");
  if (!profile.simgrid_platform.empty()) return Status::ok();  // the platform file's host count decides
  if (workers > profile.devices()) {
    return Status::invalid_argument(field + "more than the " + std::to_string(profile.devices()) +
                                    " devices of profile '" + profile.name + "'");
  }
  // Fewer workers than one node's devices use part of one node; more must fill whole nodes.
  if (workers > profile.devices_per_node && workers % profile.devices_per_node != 0) {
    return Status::invalid_argument(field + "not a multiple of devices_per_node " +
                                    std::to_string(profile.devices_per_node) + " of profile '" + profile.name + "'");
  }
  return Status::ok();
}

std::vector<std::string> shipped_profile_names() {
  std::vector<std::string> names;
  for (const EmbeddedProfile& profile : embedded_profiles())
    names.emplace_back(profile.name);
  return names;
}

StatusOr<ClusterProfile> load_cluster_profile(const std::string& name_or_path) {
  for (const EmbeddedProfile& profile : embedded_profiles()) {
    if (profile.name == name_or_path) return parse_cluster_profile(std::string(profile.yaml), name_or_path + ".yaml");
  }
  if (ends_with(name_or_path, ".xml")) {
    // A SimGrid platform file: its hosts are the workers, one per node; the
    // network is the file's. There is no device model, so compute tasks need
    // a cost key with a cost (a plain XML file has none): use it for
    // communication studies.
    std::error_code missing;
    if (!std::filesystem::exists(name_or_path, missing)) return Status::not_found(name_or_path + ": no such file");
    ClusterProfile xml;
    xml.name = std::filesystem::path(name_or_path).filename().string();
    xml.description = "SimGrid platform file " + name_or_path;
    xml.simgrid_platform = name_or_path;
    xml.device.name = "simgrid-host";
    return xml;
  }
  std::error_code error;
  if (std::filesystem::exists(name_or_path, error)) return read_cluster_profile(name_or_path);
  if (name_or_path.find('/') != std::string::npos || ends_with(name_or_path, ".yaml") ||
      ends_with(name_or_path, ".yml")) {
    return Status::not_found(name_or_path + ": no such file");
  }
  std::string shipped;
  for (const std::string& name : shipped_profile_names())
    shipped += (shipped.empty() ? "" : ", ") + name;
  return Status::not_found("unknown platform '" + name_or_path + "' (shipped: " + shipped +
                           "; or a path to a .yaml file)");
}

}  // namespace clustertwin::cluster
