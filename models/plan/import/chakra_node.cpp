// One node of a rank's Chakra file to a task (chakra_node.h).

#include "models/plan/import/chakra_node.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include "common/text.h"

namespace clustertwin::models::chakra_detail {
namespace {

namespace ch = traces::chakra;
using ch::NodeType;

constexpr const char* kSupported =
    "supported: COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE; "
    "METADATA_NODE and INVALID_NODE are skipped";

// Reads the typed attributes of one node; every error names the file and node.
class NodeReader {
 public:
  NodeReader(const ch::Node& node, std::string where) : node_(node), where_(std::move(where)) {}
  const std::string& where() const { return where_; }

  Status fail(const std::string& message) const { return Status::invalid_argument(where_ + ": " + message); }

  StatusOr<std::optional<int64_t>> integer(const char* key, int64_t min = std::numeric_limits<int64_t>::min(),
                                           int64_t max = std::numeric_limits<int64_t>::max()) const {
    const ch::Attribute* a = node_.attr(key);
    if (!a) return std::optional<int64_t>();
    auto v = ch::attr_int(*a, where_);
    if (!v.is_ok()) return v.status();
    if (*v < min || *v > max) {
      return fail("attribute '" + std::string(key) + "': " + std::to_string(*v) + " is out of range [" +
                  std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return std::optional<int64_t>(*v);
  }
  StatusOr<int64_t> required(const char* key, int64_t min = 0,
                             int64_t max = std::numeric_limits<int64_t>::max()) const {
    auto v = integer(key, min, max);
    if (!v.is_ok()) return v.status();
    if (!v->has_value()) {
      return fail("a " + ch::node_type_name(node_.type) + " needs the attribute '" + key + "'");
    }
    return **v;
  }
  StatusOr<std::optional<std::string>> text(const char* key) const {
    const ch::Attribute* a = node_.attr(key);
    if (!a) return std::optional<std::string>();
    auto v = ch::attr_string(*a, where_);
    if (!v.is_ok()) return v.status();
    return std::optional<std::string>(*v);
  }
  StatusOr<bool> flag(const char* key) const {
    const ch::Attribute* a = node_.attr(key);
    if (!a) return false;
    return ch::attr_bool(*a, where_);
  }

 private:
  const ch::Node& node_;
  std::string where_;
};

// `auto NAME_or = EXPR;` returning its status when it holds none. #undef at the end of the file (unity builds).
#define CT_CHAKRA_TRY(lhs, expr) \
  auto lhs##_or = (expr);        \
  if (!lhs##_or.is_ok()) return lhs##_or.status();

// "G" or "G/S" of a "stride:" attribute: digits, a stride G >= 1 and a span S a multiple of it.
std::optional<GroupSpec> stride_from_text(const std::string& text) {
  const size_t slash = text.find('/');
  const std::string g = text.substr(0, slash), s = slash == std::string::npos ? "" : text.substr(slash + 1);
  auto digits = [](const std::string& t) {
    return !t.empty() && t.size() < 8 && std::all_of(t.begin(), t.end(), ::isdigit);
  };
  if (!digits(g) || (slash != std::string::npos && !digits(s))) return std::nullopt;
  GroupSpec spec{GroupSpec::Kind::kStride, std::stoi(g), s.empty() ? 0 : std::stoi(s)};
  if (spec.size < 1 || (slash != std::string::npos && (spec.span < 1 || spec.span % spec.size != 0)))
    return std::nullopt;
  return spec;
}

StatusOr<GroupSpec> group_from_text(const NodeReader& in, const std::string& text) {
  if (text == "world") return GroupSpec{};
  if (text.rfind("stride:", 0) == 0) {
    if (std::optional<GroupSpec> spec = stride_from_text(text.substr(7))) return *spec;
  }
  if (text == "node") return GroupSpec{GroupSpec::Kind::kNode, 0};
  for (const auto& [prefix, kind] : {std::pair{"block:", GroupSpec::Kind::kBlock}}) {
    const std::string p = prefix;
    if (text.rfind(p, 0) == 0 && text.size() > p.size() && text.size() < p.size() + 8 &&
        std::all_of(text.begin() + static_cast<std::ptrdiff_t>(p.size()), text.end(), ::isdigit)) {
      const int size = std::stoi(text.substr(p.size()));
      if (size >= 1) return GroupSpec{kind, size};
    }
  }
  return in.fail("attribute 'ct_group': '" + text + "' is not a group (world, node, block:G, stride:G, stride:G/S)");
}

// The plan's group for a process group's members, seen from `rank`.
StatusOr<GroupSpec> group_from_members(const NodeReader& in, const std::string& pg, const std::vector<int>& m, int rank,
                                       int world) {
  const auto text = [&m] {
    std::string s = "[";
    for (size_t i = 0; i < m.size(); ++i)
      s += (i ? ", " : "") + std::to_string(m[i]);
    return s + "]";
  };
  if (!std::binary_search(m.begin(), m.end(), rank)) {
    return in.fail("pg_name '" + pg + "': this file's rank " + std::to_string(rank) + " is not in its members " +
                   text());
  }
  const int n = static_cast<int>(m.size());
  if (m.back() >= world) {
    return in.fail("pg_name '" + pg + "': member " + std::to_string(m.back()) + " is outside the world of " +
                   std::to_string(world) + " rank(s)");
  }
  if (n == world) return GroupSpec{};
  if (world % n == 0 && m.front() % n == 0 && m.back() - m.front() == n - 1) {
    return GroupSpec{GroupSpec::Kind::kBlock, n};
  }
  const int stride = world / n;
  bool strided = world % n == 0 && m.front() == rank % stride;
  for (int i = 1; strided && i < n; ++i)
    strided = m[i] - m[i - 1] == stride;
  if (strided) return GroupSpec{GroupSpec::Kind::kStride, stride};
  // A stride inside aligned blocks of n x d ranks (a data-parallel group of one pipeline stage).
  const int d = n > 1 ? m[1] - m[0] : 0;
  bool spanned = d >= 1 && world % (n * d) == 0 && m.front() % (n * d) < d;
  for (int i = 1; spanned && i < n; ++i)
    spanned = m[i] - m[i - 1] == d;
  if (spanned) return GroupSpec{GroupSpec::Kind::kStride, d, n * d};
  return in.fail(
      "pg_name '" + pg + "': members " + text() +
      " are neither the world, an aligned block, a stride of it nor a stride within aligned blocks (the groups a "
      "plan can hold)");
}

std::optional<CollectiveOp> op_of(int64_t comm_type) {
  switch (static_cast<ch::CollectiveType>(comm_type)) {
    case ch::CollectiveType::kAllReduce:
      return CollectiveOp::kAllReduce;
    case ch::CollectiveType::kAllGather:
      return CollectiveOp::kAllGather;
    case ch::CollectiveType::kReduceScatter:
      return CollectiveOp::kReduceScatter;
    case ch::CollectiveType::kAllToAll:
      return CollectiveOp::kAllToAll;
    case ch::CollectiveType::kBroadcast:
      return CollectiveOp::kBroadcast;
    default:
      return std::nullopt;
  }
}

// A send's or recv's op, peer (as an offset from this rank) and tag.
Status read_peer(const NodeReader& in, const ch::Node& node, int rank, int world, Collective* c) {
  const bool send = node.type == static_cast<int>(NodeType::kCommSend);
  c->op = send ? CollectiveOp::kSend : CollectiveOp::kRecv;
  const char* self_key = send ? "comm_src" : "comm_dst";
  const char* peer_key = send ? "comm_dst" : "comm_src";
  CT_CHAKRA_TRY(self, in.integer(self_key));
  if (self_or->has_value() && **self_or != rank) {
    return in.fail(std::string(self_key) + " " + std::to_string(**self_or) + ", but this is the file of rank " +
                   std::to_string(rank));
  }
  CT_CHAKRA_TRY(peer, in.required(peer_key, std::numeric_limits<int64_t>::min()));
  const int64_t p = *peer_or;
  if (p < 0 || p >= world) {
    return in.fail(std::string(peer_key) + " " + std::to_string(p) + " is outside the world of " +
                   std::to_string(world) + " rank(s) (give one file per rank)");
  }
  if (p == rank) return in.fail(std::string(peer_key) + " " + std::to_string(p) + " is this file's own rank");
  c->peer_offset = static_cast<int>((p - rank + world) % world);
  CT_CHAKRA_TRY(tag, in.integer("comm_tag", std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  c->tag = static_cast<int>(tag_or->value_or(0));
  return Status::ok();
}

// The communication part of a COMM_* node: op, sizes, peer, group.
Status read_comm(const NodeReader& in, const ch::Node& node, int rank, int world, const ChakraImportOptions& options,
                 RankTask* out, FileCounts* counts) {
  Task& t = out->task;
  t.kind = TaskKind::kCollective;
  Collective c;
  CT_CHAKRA_TRY(size, in.required("comm_size"));
  t.bytes = *size_or;
  if (node.type == static_cast<int>(NodeType::kCommColl)) {
    CT_CHAKRA_TRY(type, in.required("comm_type", std::numeric_limits<int64_t>::min()));
    auto op = op_of(*type_or);
    if (!op) {
      return in.fail("comm_type " + ch::collective_type_name(*type_or) +
                     " is not supported (supported: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)");
    }
    c.op = *op;
  } else {
    CT_RETURN_IF_ERROR(read_peer(in, node, rank, world, &c));
  }
  CT_CHAKRA_TRY(group, in.text("ct_group"));
  CT_CHAKRA_TRY(pg, in.text("pg_name"));
  if (group_or->has_value()) {
    CT_CHAKRA_TRY(spec, group_from_text(in, **group_or));
    c.group = *spec_or;
  } else if (pg_or->has_value()) {
    if (auto members = options.comm_groups.find(**pg_or); members != options.comm_groups.end()) {
      CT_CHAKRA_TRY(spec, group_from_members(in, **pg_or, members->second, rank, world));
      c.group = *spec_or;
    } else {
      ++counts->world_groups;
    }
  }
  CT_CHAKRA_TRY(algorithm, in.text("ct_algorithm"));
  if (algorithm_or->has_value()) {
    auto a = algorithm_from_name(**algorithm_or);
    if (!a) return in.fail("attribute 'ct_algorithm': unknown algorithm '" + **algorithm_or + "'");
    c.algorithm = *a;
  }
  CT_CHAKRA_TRY(root, in.integer("ct_root", 0, std::numeric_limits<int>::max()));
  c.root = static_cast<int>(root_or->value_or(0));
  if (const ch::Attribute* a = node.attr("ct_split_bytes")) {
    auto split = ch::attr_int_list(*a, in.where());
    if (!split.is_ok()) return split.status();
    c.split_bytes = *split;
  }
  t.collective = c;
  return Status::ok();
}

// The task's kind from the node's type (a collective's fields with it), and its FLOPs and bytes.
Status read_task_kind(const NodeReader& in, const ch::Node& node, int rank, int world,
                      const ChakraImportOptions& options, RankTask* out, FileCounts* counts) {
  Task& t = out->task;
  const auto type = static_cast<NodeType>(node.type);
  CT_CHAKRA_TRY(cpu, in.flag("is_cpu_op"));
  CT_CHAKRA_TRY(num_ops, in.integer("num_ops", 0));
  CT_CHAKRA_TRY(tensor_size, in.integer("tensor_size", 0));
  CT_CHAKRA_TRY(kind, in.text("ct_kind"));
  switch (type) {
    case NodeType::kComp:
      t.kind = *cpu_or ? TaskKind::kHost : TaskKind::kCompute;
      break;
    case NodeType::kMemLoad:
    case NodeType::kMemStore:
      t.kind = TaskKind::kCopy;
      if (kind_or->has_value()) {
        if (**kind_or != "lookup") return in.fail("attribute 'ct_kind': '" + **kind_or + "' (allowed: lookup)");
        t.kind = TaskKind::kLookup;
      }
      break;
    case NodeType::kCommColl:
    case NodeType::kCommSend:
    case NodeType::kCommRecv:
      CT_RETURN_IF_ERROR(read_comm(in, node, rank, world, options, out, counts));
      break;
    default:
      if (node.type < 0 || node.type > static_cast<int>(NodeType::kCheckpoint)) {
        return in.fail("type " + std::to_string(node.type) + " is not a Chakra node type (" + kSupported + ")");
      }
      return in.fail("type " + ch::node_type_name(node.type) + " is not supported (" + kSupported + ")");
  }
  if (t.kind != TaskKind::kCollective) {
    t.flops = static_cast<double>(num_ops_or->value_or(0));
    t.bytes = tensor_size_or->value_or(0);
  }
  return Status::ok();
}

// The stream: ours by index; a foreign file's by the stream it names, else by kind.
Status read_stream(const NodeReader& in, const std::vector<std::string>& ct_streams, RankTask* out) {
  const Task& t = out->task;
  CT_CHAKRA_TRY(stream, in.integer("stream", 0, 1 << 30));
  if (!ct_streams.empty()) {
    if (!stream_or->has_value() || **stream_or >= static_cast<int64_t>(ct_streams.size())) {
      return in.fail("attribute 'stream': " + (stream_or->has_value() ? std::to_string(**stream_or) : "missing") +
                     ", but the metadata's ct_streams name " + std::to_string(ct_streams.size()));
    }
    out->stream = ct_streams[**stream_or];
  } else if (t.kind == TaskKind::kHost) {
    out->stream = "host";
  } else if (stream_or->has_value()) {
    out->stream = "stream " + std::to_string(**stream_or);
  } else {
    out->stream = t.kind == TaskKind::kCompute ? "compute" : t.kind == TaskKind::kCollective ? "comm" : "copy";
  }
  return Status::ok();
}

// Pricing: as our export recorded it, else from the duration or the FLOPs.
Status read_pricing(const NodeReader& in, const ch::Node& node, const ChakraImportOptions& options, RankTask* out) {
  Task& t = out->task;
  CT_CHAKRA_TRY(cost_key, in.text("ct_cost_key"));
  // Divided, not multiplied by 1e-6: 240 us is then the double nearest 240e-6.
  const double duration = static_cast<double>(node.duration_micros) / 1e6;
  if (cost_key_or->has_value()) {
    t.cost_key = **cost_key_or;
  } else if (t.kind == TaskKind::kHost) {
    out->duration = duration;  // host work has no roofline
  } else if (t.kind == TaskKind::kCompute) {
    const bool flops_first = options.compute_cost == ChakraComputeCost::kFlops;
    if ((flops_first && t.flops > 0) || (!flops_first && node.duration_micros == 0 && t.flops > 0)) {
      out->by_flops = true;
    } else if (node.duration_micros > 0) {
      out->duration = duration;
    }
  } else if ((t.kind == TaskKind::kCopy || t.kind == TaskKind::kLookup) && t.bytes == 0 && node.duration_micros > 0) {
    out->duration = duration;
  }
  return Status::ok();
}

// The fields only our export writes (ct_*), each its default when absent.
Status read_clustertwin_fields(const NodeReader& in, Task* t) {
  CT_CHAKRA_TRY(dtype, in.text("ct_dtype"));
  t->dtype = dtype_or->value_or("");
  CT_CHAKRA_TRY(micro_batch, in.integer("ct_micro_batch", -1, std::numeric_limits<int>::max()));
  t->micro_batch = static_cast<int>(micro_batch_or->value_or(-1));
  CT_CHAKRA_TRY(batch_offset, in.integer("ct_batch_offset", 0, std::numeric_limits<int>::max()));
  t->batch_offset = static_cast<int>(batch_offset_or->value_or(0));
  CT_CHAKRA_TRY(requests, in.integer("ct_requests", 0));
  t->requests = requests_or->value_or(0);
  CT_CHAKRA_TRY(grad_bytes, in.integer("ct_grad_bytes", 0));
  t->grad_bytes = grad_bytes_or->value_or(0);
  CT_CHAKRA_TRY(launches, in.integer("ct_launches", 0, std::numeric_limits<int>::max()));
  t->launches = static_cast<int>(launches_or->value_or(0));
  CT_CHAKRA_TRY(sync, in.integer("ct_sync", 0, 1));
  t->sync = sync_or->value_or(0) == 1;
  return Status::ok();
}

}  // namespace

bool skipped_type(int type) {
  return type == static_cast<int>(NodeType::kMetadata) || type == static_cast<int>(NodeType::kInvalid);
}

// Everything but the dependencies of one node.
StatusOr<RankTask> convert_node(const ch::Node& node, const std::string& name, int rank, int world,
                                const std::vector<std::string>& ct_streams, const ChakraImportOptions& options,
                                const std::string& path, FileCounts* counts) {
  const NodeReader in(node, path + ": node " + std::to_string(node.id) + " (" + quote_for_message(node.name) + ")");
  RankTask out;
  out.node_id = node.id;
  out.task.name = name;
  CT_RETURN_IF_ERROR(read_task_kind(in, node, rank, world, options, &out, counts));
  CT_RETURN_IF_ERROR(read_stream(in, ct_streams, &out));
  CT_RETURN_IF_ERROR(read_pricing(in, node, options, &out));
  CT_RETURN_IF_ERROR(read_clustertwin_fields(in, &out.task));
  return out;
}

}  // namespace clustertwin::models::chakra_detail

#undef CT_CHAKRA_TRY
