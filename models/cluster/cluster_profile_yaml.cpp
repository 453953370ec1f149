#include "models/cluster/cluster_profile_yaml.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace clustertwin::cluster {

std::string yaml_number(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}

std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

namespace {

class Writer {
 public:
  void line(int indent, const std::string& text) { out_ << std::string(2 * indent, ' ') << text << '\n'; }
  void field(int indent, const std::string& key, const std::string& value, const char* unit = nullptr) {
    line(indent, key + ": " + value + (unit ? std::string("  # ") + unit : std::string()));
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

void write_link(Writer& w, int indent, const LinkSpec& link) {
  w.field(indent, "bandwidth", yaml_number(link.bandwidth), "bytes/s");
  w.field(indent, "latency", yaml_number(link.latency), "s");
}

void write_device(Writer& w, int indent, const DeviceType& d) {
  w.field(indent, "name", yaml_quoted(d.name));
  w.line(indent, "peak_flops:");
  for (const auto& [type, rate] : d.peak_flops)
    w.field(indent + 1, type, yaml_number(rate), "FLOP/s");
  w.field(indent, "memory", yaml_number(d.memory_bytes), "bytes");
  w.field(indent, "memory_bandwidth", yaml_number(d.memory_bandwidth), "bytes/s");
  w.field(indent, "compute_efficiency", yaml_number(d.compute_efficiency));
  w.field(indent, "memory_efficiency", yaml_number(d.memory_efficiency));
}

void write_topology(Writer& w, const Topology& t) {
  w.line(0, "topology:");
  w.field(1, "kind", std::string(topology_kind_name(t.kind)));
  switch (t.kind) {
    case Topology::Kind::kSingleSwitch:
      return;
    case Topology::Kind::kFatTree:
    case Topology::Kind::kRailLeafSpine: {
      w.field(1, "levels", std::to_string(t.levels));
      w.field(1, "nodes_per_leaf", std::to_string(t.nodes_per_leaf));
      if (t.levels > 1) w.field(1, "radix", std::to_string(t.radix));
      if (!t.oversubscription.empty()) {
        std::string list = "[";
        for (size_t i = 0; i < t.oversubscription.size(); ++i)
          list += (i ? ", " : "") + yaml_number(t.oversubscription[i]);
        w.field(1, "oversubscription", list + "]");
      }
      break;
    }
    case Topology::Kind::kDragonfly:
      w.field(1, "nodes_per_leaf", std::to_string(t.nodes_per_leaf));
      w.field(1, "routers_per_group", std::to_string(t.routers_per_group));
      w.field(1, "global_links_per_router", std::to_string(t.global_links_per_router));
      break;
  }
  w.line(1, "switch_link:");
  write_link(w, 2, t.switch_link);
}

// Links within a node, to the host and out of the node, and the topology between nodes.
void write_network(Writer& w, const ClusterProfile& p) {
  if (p.intra_node.link.bandwidth > 0) {  // absent for one device per node
    w.line(0, "intra_node:");
    w.field(1, "kind", p.intra_node.kind == IntraNode::Kind::kSwitch ? "switch" : "full_mesh");
    write_link(w, 1, p.intra_node.link);
  }
  w.line(0, "host_link:");
  write_link(w, 1, p.host_link);
  w.field(0, "host_memory_bandwidth", yaml_number(p.host_memory_bandwidth), "bytes/s");
  w.line(0, "nics:");
  w.field(1, "per_node", std::to_string(p.nics.per_node));
  write_link(w, 1, p.nics.link);
  w.field(1, "rail_optimized", p.nics.rail_optimized ? "true" : "false");
  write_topology(w, p.topology);
}

// The cost keys' costs, under "costs:".
void write_costs(Writer& w, const std::map<std::string, CostModel>& costs) {
  if (costs.empty()) return;
  w.line(0, "costs:");
  for (const auto& [key, c] : costs) {
    // Kernel names from imported traces hold ':', '<', ',', spaces: quoted unless plain.
    const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
    });
    const std::string text = plain ? key : yaml_quoted(key);
    if (text.size() < 1000) {
      w.line(1, text + ":");
    } else {
      // YAML limits an implicit key to 1024 characters (a templated kernel's name runs longer): explicit.
      w.line(1, "? " + text);
      w.line(1, ":");
    }
    w.field(2, "latency", yaml_number(c.latency), "s");
    if (c.per_request > 0) w.field(2, "per_request", yaml_number(c.per_request), "s");
    if (c.flop_rate > 0) w.field(2, "flop_rate", yaml_number(c.flop_rate), "FLOP/s");
    if (c.byte_rate > 0) w.field(2, "byte_rate", yaml_number(c.byte_rate), "bytes/s");
    if (c.step_latency > 0) w.field(2, "step_latency", yaml_number(c.step_latency), "s per latency step");
    if (c.bus_rate > 0) w.field(2, "bus_rate", yaml_number(c.bus_rate), "bus bytes/s");
    if (c.step_wait > 0) w.field(2, "step_wait", yaml_number(c.step_wait), "s per latency step off the cores");
  }
}

// The collectives' factors, step waits and fitted segments, under "collectives:".
void write_collectives(Writer& w, const std::map<std::string, CollectiveFactor>& collectives) {
  if (collectives.empty()) return;
  w.line(0, "collectives:");
  for (const auto& [op, f] : collectives) {
    w.line(1, op + ":");
    w.field(2, "efficiency", yaml_number(f.efficiency));
    w.field(2, "congestion_peers", yaml_number(f.congestion_peers));
    if (f.per_peer > 0) w.field(2, "per_peer", yaml_number(f.per_peer), "s");
    if (!f.step_wait.empty()) {
      w.line(2, "step_wait:  # shared cores: s per latency step waiting for the OS, by ranks on the node");
      for (const auto& [ranks, seconds] : f.step_wait) {
        w.line(3, "- ranks: " + std::to_string(ranks));
        w.field(4, "seconds", yaml_number(seconds), "s");
      }
    }
    if (f.fit.empty()) continue;
    w.line(2, "fit:");
    for (const CollectiveSegment& s : f.fit) {
      w.line(3, "- from: " + yaml_number(s.from_bytes) + "  # bytes");
      w.field(4, "step_latency", yaml_number(s.step_latency), "s");
      w.field(4, "bus_bandwidth", yaml_number(s.bus_bandwidth), "bytes/s");
    }
  }
}

}  // namespace

StatusOr<std::string> cluster_profile_yaml(const ClusterProfile& p, const std::string& header) {
  if (!p.simgrid_platform.empty()) {
    return Status::invalid_argument("profile '" + p.name + "' stands on the SimGrid platform file '" +
                                    p.simgrid_platform + "', which a YAML profile cannot hold");
  }
  Writer w;
  std::istringstream lines(header);
  for (std::string l; std::getline(lines, l);)
    w.line(0, "# " + l);
  w.line(0, "# Schema: sim/platforms/README.md. Numbers are in SI base units (seconds, bytes, bytes/s, FLOP/s).");
  w.field(0, "name", yaml_quoted(p.name));
  w.field(0, "description", yaml_quoted(p.description));
  w.field(0, "nodes", std::to_string(p.nodes));
  w.field(0, "devices_per_node", std::to_string(p.devices_per_node));
  if (p.node_cores > 0) w.field(0, "node_cores", std::to_string(p.node_cores));
  if (p.host.modelled()) {
    w.line(0, "host:");
    w.field(1, "cores", std::to_string(p.host.cores));
    w.field(1, "launch", yaml_number(p.host.launch), "s per launch");
  }
  w.field(0, "default_dtype", p.default_dtype);
  w.line(0, "device:");
  write_device(w, 1, p.device);
  if (!p.extra_device_types.empty()) {
    w.line(0, "device_types:");
    for (const DeviceType& d : p.extra_device_types) {
      w.line(1, "-");
      write_device(w, 2, d);
    }
  }
  if (!p.node_device_type.empty()) {
    w.line(0, "node_device_type:");
    for (const auto& [node, type] : p.node_device_type)
      w.field(1, std::to_string(node), yaml_quoted(type));
  }
  write_network(w, p);
  if (!p.slowdown.empty()) {
    w.line(0, "slowdown:");
    for (const auto& [rank, factor] : p.slowdown)
      w.field(1, std::to_string(rank), yaml_number(factor));
  }
  write_costs(w, p.costs);
  write_collectives(w, p.collectives);
  return w.text();
}

}  // namespace clustertwin::cluster
