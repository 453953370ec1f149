// Reading a cluster profile from YAML. Each value's form and range is checked
// here, where the text the user wrote is at hand for the message; what relates
// fields to each other is checked by validate_cluster_profile
// (cluster_profile_checks.cpp). The schema is sim/platforms/README.md.
#include "models/cluster/cluster_profile.h"

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "common/file_io.h"
#include "common/text.h"
#include "models/cluster/field_reader.h"
#include "models/cluster/units.h"
#include "models/plan/plan.h"

namespace clustertwin::cluster {
namespace {

constexpr std::array<std::string_view, 6> kDataTypes{{"fp32", "tf32", "bf16", "fp16", "fp8", "int8"}};
constexpr std::string_view kDataTypeList = "fp32, tf32, bf16, fp16, fp8, int8";

constexpr auto kRequired = FieldReader::kRequired;
constexpr auto kOptional = FieldReader::kOptional;
constexpr int kMaxDepth = 32;

bool is_data_type(std::string_view name) {
  for (std::string_view type : kDataTypes) {
    if (type == name) return true;
  }
  return false;
}

// The YAML tree as a plain ConfigNode; keys must be plain and unique.
// The most nodes a configuration file may expand to: aliases repeat what they name, so ten lines of nested
// aliases can stand for billions of nodes (a "billion laughs"); the largest shipped file has a few hundred.
constexpr int64_t kMaxConfigNodes = 1000000;

Status convert(const YAML::Node& yaml, const std::string& source, const std::string& path, int depth, int64_t* nodes,
               ConfigNode* out) {
  const std::string where = source + (path.empty() ? ": " : ": field '" + path + "': ");
  if (depth > kMaxDepth) return Status::invalid_argument(where + "nested too deeply");
  if (++*nodes > kMaxConfigNodes) {
    return Status::invalid_argument(where + "the file expands to more than " + std::to_string(kMaxConfigNodes) +
                                    " values (aliases repeating aliases?)");
  }
  switch (yaml.Type()) {
    case YAML::NodeType::Scalar:
      out->kind = ConfigNode::Kind::kScalar;
      out->text = yaml.Scalar();
      return Status::ok();
    case YAML::NodeType::Sequence:
      out->kind = ConfigNode::Kind::kList;
      for (const YAML::Node& item : yaml) {
        out->items.emplace_back();
        const std::string item_path = path + "[" + std::to_string(out->items.size() - 1) + "]";
        CT_RETURN_IF_ERROR(convert(item, source, item_path, depth + 1, nodes, &out->items.back()));
      }
      return Status::ok();
    case YAML::NodeType::Map:
      out->kind = ConfigNode::Kind::kMap;
      for (const auto& entry : yaml) {
        const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
        if (key.empty()) return Status::invalid_argument(where + "a field name must be a plain word");
        const std::string key_path = path.empty() ? key : path + "." + key;
        for (const auto& [seen, value] : out->fields) {
          if (seen == key) return Status::invalid_argument(source + ": field '" + key_path + "' is given twice");
        }
        out->fields.push_back({key, ConfigNode()});
        CT_RETURN_IF_ERROR(convert(entry.second, source, key_path, depth + 1, nodes, &out->fields.back().second));
      }
      return Status::ok();
    default:
      out->kind = ConfigNode::Kind::kNull;
      return Status::ok();
  }
}

// Declares `var` from a StatusOr, or returns its error.
#define CT_ASSIGN_OR_RETURN(var, expr)             \
  auto var##_or = (expr);                          \
  if (!var##_or.is_ok()) return var##_or.status(); \
  auto var = std::move(var##_or).value()

Status read_device_type(const std::string& source, const std::string& path, const ConfigNode& node, DeviceType* out) {
  CT_ASSIGN_OR_RETURN(section, FieldReader::open(source, path, node));
  CT_RETURN_IF_ERROR(section.text("name", &out->name, kRequired));
  CT_ASSIGN_OR_RETURN(peaks, section.section("peak_flops", kRequired));
  if (peaks->keys().empty()) return section.error("peak_flops", "empty: give at least the rate of default_dtype");
  for (const std::string& type : peaks->keys()) {
    if (!is_data_type(type)) {
      return peaks->error(type, "unknown data type '" + type + "' (allowed: " + std::string(kDataTypeList) + ")");
    }
    CT_RETURN_IF_ERROR(
        peaks->quantity(type, Quantity::kFlopRate, FieldReader::kPositive, &out->peak_flops[type], kRequired));
  }
  CT_RETURN_IF_ERROR(
      section.quantity("memory", Quantity::kSize, FieldReader::kPositive, &out->memory_bytes, kRequired));
  CT_RETURN_IF_ERROR(section.quantity("memory_bandwidth", Quantity::kBandwidth, FieldReader::kPositive,
                                      &out->memory_bandwidth, kRequired));
  CT_RETURN_IF_ERROR(
      section.number("compute_efficiency", FieldReader::kEfficiency, &out->compute_efficiency, kOptional));
  CT_RETURN_IF_ERROR(section.number("memory_efficiency", FieldReader::kEfficiency, &out->memory_efficiency, kOptional));
  return section.finish();
}

// bandwidth and latency of a link, as fields of `section`.
Status read_link(FieldReader& section, LinkSpec* link, FieldReader::Bound bandwidth_bound,
                 FieldReader::Need bandwidth_need) {
  CT_RETURN_IF_ERROR(
      section.quantity("bandwidth", Quantity::kBandwidth, bandwidth_bound, &link->bandwidth, bandwidth_need));
  return section.quantity("latency", Quantity::kTime, FieldReader::kNonNegative, &link->latency, kOptional);
}

// A mapping {bandwidth, latency}. A bandwidth that may be 0 may also be left out.
Status read_link_section(FieldReader& parent, std::string_view key, LinkSpec* link, FieldReader::Bound bound,
                         FieldReader::Need need) {
  CT_ASSIGN_OR_RETURN(section, parent.section(key, need));
  if (!section) return Status::ok();
  CT_RETURN_IF_ERROR(read_link(*section, link, bound, bound == FieldReader::kPositive ? kRequired : kOptional));
  return section->finish();
}

// "17" or "64-127" (both ends included), within [0, limit).
Status read_index_key(const FieldReader& section, const std::string& key, int limit, std::string_view what,
                      std::pair<int, int>* range) {
  const size_t dash = key.find('-', 1);
  const std::optional<long long> first = whole_number(key.substr(0, dash));
  const std::optional<long long> last = dash == std::string::npos ? first : whole_number(key.substr(dash + 1));
  if (!first || !last)
    return section.error(key, "'" + key + "' is not a " + std::string(what) + " index or a range like 8-15");
  if (*last < *first) return section.error(key, "the range " + key + " is empty");
  for (long long index : {*first, *last}) {
    if (index < 0 || index >= limit) {
      return section.error(key, std::string(what) + " " + std::to_string(index) + " is out of range (the profile has " +
                                    std::to_string(limit) + " " + std::string(what) + "s: 0.." +
                                    std::to_string(limit - 1) + ")");
    }
  }
  *range = {static_cast<int>(*first), static_cast<int>(*last)};
  return Status::ok();
}

// One number for every level above the leaves, or a list with one per level.
Status read_oversubscription(FieldReader& section, Topology* topology) {
  const ConfigNode* node = section.child("oversubscription");
  if (node == nullptr) return Status::ok();
  const size_t above = static_cast<size_t>(topology->levels - 1);
  if (above == 0) return section.error("oversubscription", "there is no level above the leaves when levels is 1");
  const bool listed = node->kind == ConfigNode::Kind::kList;
  const std::vector<ConfigNode> values = listed ? node->items : std::vector<ConfigNode>(above, *node);
  if (values.size() != above) {
    return section.error("oversubscription", std::to_string(values.size()) + " values for " + std::to_string(above) +
                                                 (above == 1 ? " level" : " levels") +
                                                 " above the leaves; give one number for all, or one per level");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string where = listed ? "oversubscription[" + std::to_string(i) + "]" : "oversubscription";
    const bool scalar = values[i].kind == ConfigNode::Kind::kScalar;
    const std::optional<double> factor = scalar ? plain_number(values[i].text) : std::nullopt;
    if (!factor) return section.error(where, "expected a number, got " + values[i].describe());
    if (*factor < 1) return section.error(where, values[i].text + " must be >= 1");
    topology->oversubscription.push_back(*factor);
  }
  return Status::ok();
}

Status read_topology(FieldReader& top, ClusterProfile* profile) {
  CT_ASSIGN_OR_RETURN(section, top.section("topology", kRequired));
  Topology& topology = profile->topology;
  std::string kind;
  CT_RETURN_IF_ERROR(section->text("kind", &kind, kRequired));
  if (kind == "single_switch") {
    topology.kind = Topology::Kind::kSingleSwitch;
  } else if (kind == "fat_tree" || kind == "rail_leaf_spine") {
    topology.kind = kind == "fat_tree" ? Topology::Kind::kFatTree : Topology::Kind::kRailLeafSpine;
    CT_RETURN_IF_ERROR(section->integer("levels", 1, &topology.levels, kOptional));
    // The largest fabrics built have 3 or 4 switch levels; more is a typo, and each level is built.
    constexpr int kMostLevels = 8;
    if (topology.levels > kMostLevels) {
      return section->error("levels", std::to_string(topology.levels) + " must be <= " + std::to_string(kMostLevels));
    }
    CT_RETURN_IF_ERROR(section->integer("nodes_per_leaf", 1, &topology.nodes_per_leaf, kRequired));
    const bool above = topology.levels > 1;
    CT_RETURN_IF_ERROR(section->integer("radix", above ? 2 : 1, &topology.radix, above ? kRequired : kOptional,
                                        above ? " when levels > 1" : ""));
    CT_RETURN_IF_ERROR(read_oversubscription(*section, &topology));
    CT_RETURN_IF_ERROR(
        read_link_section(*section, "switch_link", &topology.switch_link, FieldReader::kNonNegative, kOptional));
  } else if (kind == "dragonfly") {
    topology.kind = Topology::Kind::kDragonfly;
    CT_RETURN_IF_ERROR(section->integer("nodes_per_leaf", 1, &topology.nodes_per_leaf, kRequired));
    CT_RETURN_IF_ERROR(section->integer("routers_per_group", 1, &topology.routers_per_group, kRequired));
    CT_RETURN_IF_ERROR(section->integer("global_links_per_router", 1, &topology.global_links_per_router, kRequired));
    CT_RETURN_IF_ERROR(
        read_link_section(*section, "switch_link", &topology.switch_link, FieldReader::kNonNegative, kOptional));
  } else {
    return section->error(
        "kind", "unknown topology '" + kind + "' (allowed: single_switch, fat_tree, rail_leaf_spine, dragonfly)");
  }
  return section->finish();
}

Status read_network(FieldReader& top, ClusterProfile* profile) {
  CT_RETURN_IF_ERROR(read_link_section(top, "host_link", &profile->host_link, FieldReader::kPositive, kRequired));
  CT_RETURN_IF_ERROR(top.quantity("host_memory_bandwidth", Quantity::kBandwidth, FieldReader::kPositive,
                                  &profile->host_memory_bandwidth, kRequired));
  // One device per node has no intra-node link to describe.
  CT_ASSIGN_OR_RETURN(intra, top.section("intra_node", profile->devices_per_node > 1 ? kRequired : kOptional));
  if (intra) {
    std::string kind = "switch";
    CT_RETURN_IF_ERROR(intra->text("kind", &kind, kOptional));
    if (kind != "switch" && kind != "full_mesh") {
      return intra->error("kind", "unknown intra-node kind '" + kind + "' (allowed: switch, full_mesh)");
    }
    profile->intra_node.kind = kind == "switch" ? IntraNode::Kind::kSwitch : IntraNode::Kind::kFullMesh;
    CT_RETURN_IF_ERROR(read_link(*intra, &profile->intra_node.link, FieldReader::kPositive, kRequired));
    CT_RETURN_IF_ERROR(intra->finish());
  }
  CT_ASSIGN_OR_RETURN(nics, top.section("nics", kRequired));
  CT_RETURN_IF_ERROR(nics->integer("per_node", 1, &profile->nics.per_node, kOptional));
  CT_RETURN_IF_ERROR(read_link(*nics, &profile->nics.link, FieldReader::kPositive, kRequired));
  CT_RETURN_IF_ERROR(nics->boolean("rail_optimized", &profile->nics.rail_optimized, kOptional));
  CT_RETURN_IF_ERROR(nics->finish());
  return read_topology(top, profile);
}

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// collectives.OP.fit: a list of segments {from, step_latency, bus_bandwidth}, the first from 0, each
// starting above the one before.
Status read_collective_fit(FieldReader& factor, std::vector<CollectiveSegment>* fit) {
  const ConfigNode* list = factor.child("fit");
  if (list == nullptr) return Status::ok();
  if (list->kind != ConfigNode::Kind::kList) {
    return factor.error("fit",
                        "expected a list of segments {from, step_latency, bus_bandwidth}, got " + list->describe());
  }
  if (list->items.empty()) return factor.error("fit", "an empty list: give at least one segment");
  for (size_t i = 0; i < list->items.size(); ++i) {
    const std::string at = "fit[" + std::to_string(i) + "]";
    CT_ASSIGN_OR_RETURN(segment, FieldReader::open(factor.source(), factor.path_of(at), list->items[i]));
    CollectiveSegment c;
    CT_RETURN_IF_ERROR(segment.quantity("from", Quantity::kSize, FieldReader::kNonNegative, &c.from_bytes, kRequired));
    CT_RETURN_IF_ERROR(
        segment.quantity("step_latency", Quantity::kTime, FieldReader::kNonNegative, &c.step_latency, kRequired));
    CT_RETURN_IF_ERROR(
        segment.quantity("bus_bandwidth", Quantity::kBandwidth, FieldReader::kPositive, &c.bus_bandwidth, kRequired));
    CT_RETURN_IF_ERROR(segment.finish());
    if (i == 0 && c.from_bytes != 0) return segment.error("from", "the first segment must start at 0");
    if (i > 0 && c.from_bytes <= fit->back().from_bytes)
      return segment.error("from", format_number(c.from_bytes) + " bytes must be above the previous segment's from (" +
                                       format_number(fit->back().from_bytes) + ")");
    fit->push_back(c);
  }
  return Status::ok();
}

// collectives.OP.step_wait: a list of {ranks, seconds}, ranks ascending.
Status read_step_wait(FieldReader& factor, std::map<int, double>* waits) {
  const ConfigNode* list = factor.child("step_wait");
  if (list == nullptr) return Status::ok();
  if (list->kind != ConfigNode::Kind::kList || list->items.empty()) {
    return factor.error("step_wait", "expected a non-empty list of {ranks, seconds}, got " + list->describe());
  }
  for (size_t i = 0; i < list->items.size(); ++i) {
    const std::string at = "step_wait[" + std::to_string(i) + "]";
    CT_ASSIGN_OR_RETURN(entry, FieldReader::open(factor.source(), factor.path_of(at), list->items[i]));
    int ranks = 0;
    double seconds = 0;
    CT_RETURN_IF_ERROR(entry.integer("ranks", 1, &ranks, kRequired));
    CT_RETURN_IF_ERROR(entry.quantity("seconds", Quantity::kTime, FieldReader::kNonNegative, &seconds, kRequired));
    CT_RETURN_IF_ERROR(entry.finish());
    if (!waits->empty() && ranks <= waits->rbegin()->first) {
      return entry.error("ranks", std::to_string(ranks) + " must be above the previous entry's (" +
                                      std::to_string(waits->rbegin()->first) + ")");
    }
    (*waits)[ranks] = seconds;
  }
  return Status::ok();
}

// device_types, node_device_type, slowdown and costs: what varies across the cluster.
// The cost keys' costs ("costs"), each with at least one field.
Status read_costs(FieldReader& top, ClusterProfile* profile) {
  CT_ASSIGN_OR_RETURN(costs, top.section("costs", kOptional));
  for (const std::string& key : costs ? costs->keys() : std::vector<std::string>()) {
    CT_ASSIGN_OR_RETURN(cost, costs->section(key, kRequired));
    CostModel& model = profile->costs[key];
    CT_RETURN_IF_ERROR(
        cost->quantity("latency", Quantity::kTime, FieldReader::kNonNegative, &model.latency, kOptional));
    CT_RETURN_IF_ERROR(
        cost->quantity("per_request", Quantity::kTime, FieldReader::kNonNegative, &model.per_request, kOptional));
    CT_RETURN_IF_ERROR(
        cost->quantity("flop_rate", Quantity::kFlopRate, FieldReader::kNonNegative, &model.flop_rate, kOptional));
    CT_RETURN_IF_ERROR(
        cost->quantity("byte_rate", Quantity::kBandwidth, FieldReader::kNonNegative, &model.byte_rate, kOptional));
    CT_RETURN_IF_ERROR(
        cost->quantity("step_latency", Quantity::kTime, FieldReader::kNonNegative, &model.step_latency, kOptional));
    CT_RETURN_IF_ERROR(
        cost->quantity("bus_rate", Quantity::kBandwidth, FieldReader::kNonNegative, &model.bus_rate, kOptional));
    CT_RETURN_IF_ERROR(
        cost->quantity("step_wait", Quantity::kTime, FieldReader::kNonNegative, &model.step_wait, kOptional));
    if (cost->keys().empty()) {
      return costs->error(
          key, "give at least one of latency, per_request, flop_rate, byte_rate, step_latency, bus_rate, step_wait");
    }
    CT_RETURN_IF_ERROR(cost->finish());
  }
  return Status::ok();
}

// The collectives' factors ("collectives"), each with at least one field.
Status read_collective_factors(FieldReader& top, ClusterProfile* profile) {
  CT_ASSIGN_OR_RETURN(collectives, top.section("collectives", kOptional));
  for (const std::string& key : collectives ? collectives->keys() : std::vector<std::string>()) {
    auto op = models::collective_op_from_name(key);
    if (!op || *op == models::CollectiveOp::kSend || *op == models::CollectiveOp::kRecv) {
      return collectives->error(
          key, "unknown collective '" + key + "' (allowed: allreduce, alltoall, allgather, reducescatter, broadcast)");
    }
    CT_ASSIGN_OR_RETURN(factor, collectives->section(key, kRequired));
    CollectiveFactor& f = profile->collectives[key];
    CT_RETURN_IF_ERROR(factor->number("efficiency", FieldReader::kEfficiency, &f.efficiency, kOptional));
    CT_RETURN_IF_ERROR(factor->number("congestion_peers", FieldReader::kNonNegative, &f.congestion_peers, kOptional));
    CT_RETURN_IF_ERROR(
        factor->quantity("per_peer", Quantity::kTime, FieldReader::kNonNegative, &f.per_peer, kOptional));
    CT_RETURN_IF_ERROR(read_collective_fit(*factor, &f.fit));
    CT_RETURN_IF_ERROR(read_step_wait(*factor, &f.step_wait));
    if (factor->keys().empty())
      return collectives->error(key, "give at least one of efficiency, congestion_peers, per_peer, fit, step_wait");
    CT_RETURN_IF_ERROR(factor->finish());
  }
  return Status::ok();
}

Status read_variations(FieldReader& top, ClusterProfile* profile) {
  if (const ConfigNode* types = top.child("device_types")) {
    if (types->kind != ConfigNode::Kind::kList) {
      return top.error("device_types", "expected a list of device types, got " + types->describe());
    }
    for (size_t i = 0; i < types->items.size(); ++i) {
      profile->extra_device_types.emplace_back();
      CT_RETURN_IF_ERROR(read_device_type(top.source(), "device_types[" + std::to_string(i) + "]", types->items[i],
                                          &profile->extra_device_types.back()));
    }
  }
  CT_ASSIGN_OR_RETURN(node_types, top.section("node_device_type", kOptional));
  std::set<int> named_nodes;
  for (const std::string& key : node_types ? node_types->keys() : std::vector<std::string>()) {
    std::pair<int, int> range;
    std::string type;
    CT_RETURN_IF_ERROR(read_index_key(*node_types, key, profile->nodes, "node", &range));
    CT_RETURN_IF_ERROR(node_types->text(key, &type, kRequired));
    for (int node = range.first; node <= range.second; ++node) {
      if (!named_nodes.insert(node).second)
        return node_types->error(key, "node " + std::to_string(node) + " is given twice");
      if (type != profile->device.name) profile->node_device_type[node] = type;  // the default needs no entry
    }
  }
  CT_ASSIGN_OR_RETURN(slowdown, top.section("slowdown", kOptional));
  for (const std::string& key : slowdown ? slowdown->keys() : std::vector<std::string>()) {
    std::pair<int, int> range;
    double factor = 1;
    CT_RETURN_IF_ERROR(read_index_key(*slowdown, key, profile->devices(), "device", &range));
    CT_RETURN_IF_ERROR(slowdown->number(key, FieldReader::kAtLeastOne, &factor, kRequired));
    for (int rank = range.first; rank <= range.second; ++rank) {
      if (!profile->slowdown.emplace(rank, factor).second) {
        return slowdown->error(key, "device " + std::to_string(rank) + " is given twice");
      }
    }
  }
  CT_RETURN_IF_ERROR(read_costs(top, profile));
  return read_collective_factors(top, profile);
}

Status read_profile(const ConfigNode& root, const std::string& source, ClusterProfile* profile) {
  CT_ASSIGN_OR_RETURN(top, FieldReader::open(source, "", root));
  profile->name = std::filesystem::path(source).stem().string();
  CT_RETURN_IF_ERROR(top.text("name", &profile->name, kOptional));
  CT_RETURN_IF_ERROR(top.text("description", &profile->description, kOptional));
  CT_RETURN_IF_ERROR(top.integer("nodes", 1, &profile->nodes, kRequired));
  CT_RETURN_IF_ERROR(top.integer("devices_per_node", 1, &profile->devices_per_node, kRequired));
  if (static_cast<long long>(profile->nodes) * profile->devices_per_node > std::numeric_limits<int>::max()) {
    return top.error("nodes", "nodes * devices_per_node is more devices than the twin can number");
  }
  CT_RETURN_IF_ERROR(top.integer("node_cores", 1, &profile->node_cores, kOptional));
  CT_ASSIGN_OR_RETURN(host, top.section("host", kOptional));
  if (host) {
    CT_RETURN_IF_ERROR(host->integer("cores", 1, &profile->host.cores, kRequired));
    CT_RETURN_IF_ERROR(
        host->quantity("launch", Quantity::kTime, FieldReader::kNonNegative, &profile->host.launch, kOptional));
    CT_RETURN_IF_ERROR(host->finish());
    if (profile->node_cores > 0) {
      return top.error("host", "give node_cores (ranks that are CPU processes) or host (a GPU node's host), not both");
    }
  }
  CT_RETURN_IF_ERROR(top.text("default_dtype", &profile->default_dtype, kOptional));
  if (!is_data_type(profile->default_dtype)) {
    return top.error("default_dtype", "unknown data type '" + profile->default_dtype +
                                          "' (allowed: " + std::string(kDataTypeList) + ")");
  }
  const ConfigNode* device = top.child("device");
  if (device == nullptr) return top.error("device", "required but missing");
  CT_RETURN_IF_ERROR(read_device_type(source, "device", *device, &profile->device));
  CT_RETURN_IF_ERROR(read_network(top, profile));
  CT_RETURN_IF_ERROR(read_variations(top, profile));
  return top.finish();
}

#undef CT_ASSIGN_OR_RETURN

// Whether the ',' at `comma` (outside brackets and quotes) stands where a node begins: first on its line, or
// after a "- ", ": " or "? " indicator, with only tags (!t) and anchors (&a) between.
bool comma_begins_node(const std::string& text, size_t comma) {
  size_t at = comma;
  const auto skip_spaces = [&] {
    while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t'))
      --at;
  };
  skip_spaces();
  for (;;) {  // the properties before it, last first
    size_t word = at;
    while (word > 0 && text[word - 1] != ' ' && text[word - 1] != '\t' && text[word - 1] != '\n')
      --word;
    if (word == at || (text[word] != '!' && text[word] != '&')) break;
    at = word;
    skip_spaces();
  }
  if (at == 0 || text[at - 1] == '\n') return true;
  const char indicator = text[at - 1];
  return (indicator == '-' || indicator == ':' || indicator == '?') &&
         (at == 1 || text[at - 2] == ' ' || text[at - 2] == '\t' || text[at - 2] == '\n');
}

// yaml-cpp 0.7 loops forever on a ',' that stands where a node begins or after a whole one outside any flow
// collection (",a" as a document, after "- a", "!h#,", "&y ,", '"a",' or "[a],"), also behind control characters;
// no configuration of ours has one.
// Refused before yaml-cpp sees the text: a control character YAML does not allow (all of C0 but tab, LF and
// CR, and DEL), and such a ',' outside quotes and comments (comma_begins_node).
Status check_yaml_text(const std::string& text, const std::string& source) {
  int depth = 0, line = 1;
  bool line_start = true;
  char quote = 0;
  size_t closed = std::string::npos;  // the last closing quote, or bracket back to depth 0
  size_t value_start = 0;             // where the line's current value begins (after "key: ", "- ", "? ")
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(c));
      return Status::invalid_argument(source + ": not valid YAML: line " + std::to_string(line) +
                                      ": control character " + hex);
    }
    if (c == '\n') {
      ++line;
      line_start = true;
      value_start = i + 1;
      continue;
    }
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
        closed = i;
      }
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    size_t before = i;  // the comma's previous character but spaces, plus one
    while (before > 0 && (text[before - 1] == ' ' || text[before - 1] == '\t'))
      --before;
    const bool after_node = closed != std::string::npos && before == closed + 1;  // '"a",' and '[a],'
    // A comma in a value that is not a plain scalar (it begins with an indicator: a quote, a bracket, a tag, an
    // anchor, an alias, a block scalar's | or >) is a token of its own there.
    size_t value = value_start;
    while (value < i && (text[value] == ' ' || text[value] == '\t'))
      ++value;
    const bool not_plain = value == i || std::strchr("&!*\"'[{|>%@`", text[value]) != nullptr;
    if (depth == 0 && c == ',' && (after_node || not_plain || comma_begins_node(text, i))) {
      return Status::invalid_argument(source + ": not valid YAML: line " + std::to_string(line) +
                                      ": a ',' where a value begins, outside [ ] or { }");
    }
    const bool token_start = line_start || std::strchr(" \t:[{,-", text[i - 1]) != nullptr;
    line_start = false;
    const bool spaced = i + 1 == text.size() || std::strchr(" \t\r\n", text[i + 1]) != nullptr;
    if (depth == 0 && spaced && (c == ':' || ((c == '-' || c == '?') && token_start))) value_start = i + 1;
    // A quoted scalar starts a token (not the apostrophe in "paper's"), or follows a closed one at once (four
    // double quotes are two).
    if ((c == '\'' || c == '"') && (token_start || (closed != std::string::npos && i == closed + 1))) quote = c;
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && depth > 0 && --depth == 0) closed = i;
  }
  return Status::ok();
}

}  // namespace

StatusOr<ConfigNode> parse_config_yaml(const std::string& yaml_text, const std::string& source) {
  ConfigNode root;
  CT_RETURN_IF_ERROR(check_yaml_text(yaml_text, source));
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAll(yaml_text);
    if (documents.size() > 1) {
      return Status::invalid_argument(source + ": " + std::to_string(documents.size()) +
                                      " YAML documents (separated by ---): a configuration file holds one");
    }
    int64_t nodes = 0;
    CT_RETURN_IF_ERROR(convert(documents.empty() ? YAML::Node() : documents[0], source, "", 0, &nodes, &root));
  } catch (const YAML::Exception& e) {
    const std::string where = e.mark.is_null() ? std::string()
                                               : "line " + std::to_string(e.mark.line + 1) + ", column " +
                                                     std::to_string(e.mark.column + 1) + ": ";
    return Status::invalid_argument(source + ": not valid YAML: " + where + on_one_line(e.msg));
  }
  return root;
}

StatusOr<ClusterProfile> parse_cluster_profile(const std::string& yaml_text, const std::string& name) {
  auto parsed = parse_config_yaml(yaml_text, name);
  if (!parsed.is_ok()) return parsed.status();
  const ConfigNode& root = *parsed;
  if (root.kind != ConfigNode::Kind::kMap) {
    return Status::invalid_argument(name +
                                    ": a cluster profile is a mapping of fields (name, nodes, devices_per_node, " +
                                    "device, ...), got " + root.describe());
  }
  ClusterProfile profile;
  CT_RETURN_IF_ERROR(read_profile(root, name, &profile));
  CT_RETURN_IF_ERROR(validate_cluster_profile(profile, name));
  return profile;
}

StatusOr<ClusterProfile> read_cluster_profile(const std::string& path) {
  StatusOr<std::string> text = read_file(path);
  if (!text.is_ok()) return text.status();
  return parse_cluster_profile(*text, path);
}

}  // namespace clustertwin::cluster
