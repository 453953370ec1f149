// A plan to one Chakra execution graph per rank (chakra_plan.h).

#include <cmath>

#include "models/plan/import/chakra_plan.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models {
namespace {

namespace ch = traces::chakra;

ch::CollectiveType chakra_collective(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return ch::CollectiveType::kAllReduce;
    case CollectiveOp::kAllGather:
      return ch::CollectiveType::kAllGather;
    case CollectiveOp::kReduceScatter:
      return ch::CollectiveType::kReduceScatter;
    case CollectiveOp::kAllToAll:
      return ch::CollectiveType::kAllToAll;
    case CollectiveOp::kBroadcast:
      return ch::CollectiveType::kBroadcast;
    case CollectiveOp::kSend:
    case CollectiveOp::kRecv:
      break;
  }
  return ch::CollectiveType::kAllReduce;  // send and recv are node types of their own
}

std::string group_attr_text(const GroupSpec& g) {
  switch (g.kind) {
    case GroupSpec::Kind::kWorld:
      return "world";
    case GroupSpec::Kind::kNode:
      return "node";
    case GroupSpec::Kind::kBlock:
      return "block:" + std::to_string(g.size);
    case GroupSpec::Kind::kStride:
      return "stride:" + std::to_string(g.size) + (g.span > 0 ? "/" + std::to_string(g.span) : std::string());
  }
  return "world";
}

void add(ch::Node* n, std::string name, ch::Attribute::Value value) {
  n->attrs.push_back(ch::Attribute{std::move(name), std::move(value)});
}

bool is_point_to_point(const Task& t) {
  return t.collective && (t.collective->op == CollectiveOp::kSend || t.collective->op == CollectiveOp::kRecv);
}

// Rank r's file's metadata: what our import reads back (ct_*).
void set_export_metadata(const Plan& plan, int r, int world, const ChakraExportOptions& options, ch::EtFile* file) {
  file->metadata.version = "0.0.4";
  file->metadata.attrs = {
      {"schema", std::string("clustertwin-plan")},
      {"ct_system", plan.system},
      {"ct_variant", plan.variant},
      {"ct_streams", plan.streams},
      {"ct_rank", int64_t{r}},
      {"ct_world_size", int64_t{world}},
      {"ct_platform", options.platform},
  };
}

// The node type of task `t` (a lookup is a memory load with ct_kind "lookup").
void set_node_type(const Task& t, ch::Node* n) {
  switch (t.kind) {
    case TaskKind::kCompute:
    case TaskKind::kHost:
      n->type = static_cast<int>(ch::NodeType::kComp);
      break;
    case TaskKind::kCopy:
    case TaskKind::kLookup:
      n->type = static_cast<int>(ch::NodeType::kMemLoad);
      if (t.kind == TaskKind::kLookup) add(n, "ct_kind", std::string("lookup"));
      break;
    case TaskKind::kCollective:
      if (!is_point_to_point(t)) {
        n->type = static_cast<int>(ch::NodeType::kCommColl);
      } else {
        n->type = static_cast<int>(t.collective->op == CollectiveOp::kSend ? ch::NodeType::kCommSend
                                                                           : ch::NodeType::kCommRecv);
      }
      break;
  }
}

// A collective task's attributes on rank r: its type or peers, size and group; a group other than the world
// gets a pg id in `out`'s comm_groups (`group_ids`: members -> pg id, numbered from 1 as first met).
void add_collective_attrs(const Task& t, int r, int world, const ChakraExportOptions& options,
                          std::map<std::vector<int>, int>* group_ids, ChakraExport* out, ch::Node* n) {
  const Collective& c = *t.collective;
  if (!is_point_to_point(t)) {
    add(n, "comm_type", static_cast<int64_t>(chakra_collective(c.op)));
  } else {
    const int peer = ((r + c.peer_offset) % world + world) % world;
    const bool send = c.op == CollectiveOp::kSend;
    add(n, "comm_src", int64_t{send ? r : peer});
    add(n, "comm_dst", int64_t{send ? peer : r});
    add(n, "comm_tag", int64_t{c.tag});
  }
  add(n, "comm_size", t.bytes);
  if (c.group.kind != GroupSpec::Kind::kWorld) {
    const std::vector<int> members = group_members(c.group, r, world, options.devices_per_node);
    const auto [it, inserted] = group_ids->emplace(members, static_cast<int>(group_ids->size()) + 1);
    if (inserted) out->comm_groups[it->second] = members;
    add(n, "pg_name", std::to_string(it->second));
    add(n, "ct_group", group_attr_text(c.group));
  }
  if (c.algorithm != Algorithm::kAuto) add(n, "ct_algorithm", std::string(algorithm_name(c.algorithm)));
  if (c.root != 0) add(n, "ct_root", int64_t{c.root});
  if (!c.split_bytes.empty()) add(n, "ct_split_bytes", c.split_bytes);
}

// What only clustertwin reads back: the cost key, dtype, the previous step's dependencies and the task's
// pipeline and launch fields, each where it is not the default.
void add_clustertwin_attrs(const Plan& plan, const Task& t, int r, int world, ch::Node* n) {
  // How clustertwin prices it: "" is the roofline (compute) or the network (transfers).
  add(n, "ct_cost_key", t.cost_key);
  if (!t.dtype.empty()) add(n, "ct_dtype", t.dtype);
  std::vector<int64_t> prev;
  for (int d : t.prev_step_deps)
    if (runs_on(plan.tasks[d], r, world)) prev.push_back(d);
  if (!prev.empty()) add(n, "ct_prev_step_deps", prev);
  if (t.micro_batch != -1) add(n, "ct_micro_batch", int64_t{t.micro_batch});
  if (t.batch_offset != 0) add(n, "ct_batch_offset", int64_t{t.batch_offset});
  if (t.requests != 0) add(n, "ct_requests", t.requests);
  if (t.grad_bytes != 0) add(n, "ct_grad_bytes", t.grad_bytes);
  if (t.launches != 0) add(n, "ct_launches", int64_t{t.launches});
  if (t.sync) add(n, "ct_sync", int64_t{1});
}

}  // namespace

StatusOr<ChakraExport> plan_to_chakra(const Plan& plan, const std::string& name, const ChakraExportOptions& options,
                                      const ChakraTaskSeconds& seconds) {
  const int world = options.world_size;
  if (world < 1) return Status::invalid_argument(name + ": world size " + std::to_string(world) + " (must be >= 1)");
  CT_RETURN_IF_ERROR(validate_plan(plan, name));
  CT_RETURN_IF_ERROR(validate_plan_for_world(plan, name, world, options.devices_per_node));

  ChakraExport out;
  std::map<std::vector<int>, int> group_ids;  // members -> pg id, numbered from 1 as first met
  for (int r = 0; r < world; ++r) {
    ch::EtFile& file = out.ranks.emplace_back();
    set_export_metadata(plan, r, world, options, &file);
    for (const Task& t : plan.tasks) {
      if (!runs_on(t, r, world)) continue;
      ch::Node& n = file.nodes.emplace_back();
      n.id = static_cast<uint64_t>(t.id);
      n.name = t.name;
      for (int d : t.deps)
        if (runs_on(plan.tasks[d], r, world)) n.data_deps.push_back(static_cast<uint64_t>(d));
      auto s = seconds(t, r);
      if (!s.is_ok()) return s.status().with_context(name + ": rank " + std::to_string(r));
      if (s->has_value() && **s > 0) n.duration_micros = static_cast<uint64_t>(std::llround(**s * 1e6));
      set_node_type(t, &n);
      add(&n, "is_cpu_op", t.kind == TaskKind::kHost);
      add(&n, "stream", int64_t{t.stream});
      if (t.kind != TaskKind::kCollective) {
        if (t.flops > 0) add(&n, "num_ops", static_cast<int64_t>(std::llround(t.flops)));
        if (t.bytes > 0) add(&n, "tensor_size", t.bytes);
      } else {
        add_collective_attrs(t, r, world, options, &group_ids, &out, &n);
      }
      add_clustertwin_attrs(plan, t, r, world, &n);
    }
  }
  return out;
}

std::string comm_groups_json(const std::map<int, std::vector<int>>& groups) {
  std::string out = "{";
  bool first = true;
  for (const auto& [id, members] : groups) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "  \"" + std::to_string(id) + "\": [";
    for (size_t i = 0; i < members.size(); ++i)
      out += (i ? ", " : "") + std::to_string(members[i]);
    out += "]";
  }
  return out + (first ? "}\n" : "\n}\n");
}

}  // namespace clustertwin::models
