// One Chakra execution graph per rank to a plan (chakra_plan.h).

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "common/text.h"
#include "models/plan/import/chakra_node.h"
#include "models/plan/import/chakra_plan.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models {
namespace {

namespace ch = traces::chakra;
using chakra_detail::MergedTasks;
using chakra_detail::RankTask;
using chakra_detail::Variant;

// The rank each input holds: ct_rank in every file's metadata, else a name
// ending in .<rank>.et on every file, else the input order; either must give
// each of 0..n-1 once.
StatusOr<std::vector<int>> input_ranks(const std::vector<ChakraInput>& inputs) {
  const int n = static_cast<int>(inputs.size());
  const auto is_permutation = [n](const std::vector<int>& ranks) {
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < n; ++i)
      if (sorted[i] != i) return false;
    return true;
  };
  std::vector<int> from_metadata, from_names;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j)
      if (std::filesystem::path(inputs[i].path).lexically_normal() ==
          std::filesystem::path(inputs[j].path).lexically_normal())
        return Status::invalid_argument(inputs[i].path + ": given twice (give each rank's file once)");
  for (const ChakraInput& in : inputs) {
    if (const ch::Attribute* a = in.file.metadata.attr("ct_rank")) {
      auto r = ch::attr_int(*a, in.path + ": GlobalMetadata");
      if (!r.is_ok()) return r.status();
      if (*r >= 0 && *r < n) from_metadata.push_back(static_cast<int>(*r));
    }
    std::string base = in.path.substr(in.path.find_last_of('/') + 1);
    if (base.size() > 3 && base.compare(base.size() - 3, 3, ".et") == 0) {
      base.resize(base.size() - 3);
      const size_t dot = base.find_last_of('.');
      const std::string digits = dot == std::string::npos ? "" : base.substr(dot + 1);
      if (!digits.empty() && digits.size() < 9 && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
        from_names.push_back(std::stoi(digits));
      }
    }
  }
  if (static_cast<int>(from_metadata.size()) == n) {
    if (is_permutation(from_metadata)) return from_metadata;
    // Our own export's files say which rank they are: one given twice is a mistake, not another rank.
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j)
        if (from_metadata[i] == from_metadata[j]) {
          return Status::invalid_argument(inputs[i].path + ": GlobalMetadata: ct_rank " +
                                          std::to_string(from_metadata[i]) + " is also the rank of " + inputs[j].path +
                                          " (give each rank's file once)");
        }
  }
  if (static_cast<int>(from_names.size()) == n) {
    if (is_permutation(from_names)) return from_names;
    // Every name says its rank, and they are not 0..n-1 once each: a rank's file is missing or given twice.
    for (int i = 0; i < n; ++i) {
      const int seen = static_cast<int>(std::count(from_names.begin(), from_names.end(), from_names[i]));
      if (from_names[i] >= n || seen > 1) {
        return Status::invalid_argument(
            inputs[i].path + ": rank " + std::to_string(from_names[i]) + " by its name, " +
            (seen > 1 ? "as another file's" : "outside the " + std::to_string(n) + " file(s) given") +
            " (give the file of each rank 0.." + std::to_string(n - 1) + " once)");
      }
    }
  }
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i)
    order[i] = i;
  return order;
}

std::vector<RankRange> rank_ranges(const std::vector<int>& ranks, int world) {
  if (static_cast<int>(ranks.size()) == world) return {};
  std::vector<RankRange> out;
  for (int r : ranks) {
    if (!out.empty() && out.back().end == r) {
      out.back().end = r + 1;
    } else {
      out.push_back({r, r + 1});
    }
  }
  return out;
}

std::string variant_name(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".et") == 0) base.resize(base.size() - 3);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot + 1 < base.size() &&
      std::all_of(base.begin() + static_cast<std::ptrdiff_t>(dot) + 1, base.end(), ::isdigit)) {
    base.resize(dot);
  }
  return base;
}

std::string metadata_string(const ch::GlobalMetadata& m, const char* key) {
  const ch::Attribute* a = m.attr(key);
  const std::string* s = a ? std::get_if<std::string>(&a->value) : nullptr;
  return s ? *s : std::string();
}

// The process groups of a PyTorch converter's METADATA_NODE: its inputs.values is Python's text of a list
// holding one JSON string, "['[{\"pg_name\": \"0\", \"ranks\": [0, 1], ...}]']"; empty ranks mean the world.
// Other metadata nodes give none.
StatusOr<std::map<std::string, std::vector<int>>> metadata_process_groups(const ch::Node& node, int world) {
  std::map<std::string, std::vector<int>> out;
  const std::string& v = node.inputs.values;
  if (node.name.find("process_group:init") == std::string::npos || v.size() < 4) return out;
  nlohmann::json groups;
  try {  // nlohmann throws on a number beyond a double even when asked not to
    groups = nlohmann::json::parse(v.substr(2, v.size() - 4), nullptr, false);
  } catch (const nlohmann::json::exception&) {
    groups = nlohmann::json(nlohmann::json::value_t::discarded);
  }
  if (groups.is_discarded() || !groups.is_array()) {
    return Status::invalid_argument(quote_for_message(node.name) +
                                    ": inputs.values is not the process-group list the PyTorch converter writes");
  }
  for (const nlohmann::json& g : groups) {
    if (!g.is_object() || !g.contains("pg_name") || !g["pg_name"].is_string() || !g.contains("ranks") ||
        !g["ranks"].is_array()) {
      return Status::invalid_argument(
          quote_for_message(node.name) + ": a process group without pg_name and ranks: " +
          quote_for_message(g.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    }
    std::vector<int> ranks;
    for (const nlohmann::json& r : g["ranks"]) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= world) {
        return Status::invalid_argument(quote_for_message(node.name) + ": process group " +
                                        quote_for_message(g["pg_name"].get<std::string>()) + ": rank " + r.dump() +
                                        " is outside the world of " + std::to_string(world) + " rank(s)");
      }
      ranks.push_back(r.get<int>());
    }
    if (ranks.empty()) {
      for (int r = 0; r < world; ++r)
        ranks.push_back(r);
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    out[g["pg_name"].get<std::string>()] = std::move(ranks);
  }
  return out;
}

// The streams named by our own export, the same in every file; a file written elsewhere names none. Each file's
// ct_world_size, where it has one, must be the number of files.
StatusOr<std::vector<std::string>> exported_streams(const std::vector<ChakraInput>& inputs) {
  const int world = static_cast<int>(inputs.size());
  std::vector<std::string> ct_streams;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ch::GlobalMetadata& m = inputs[i].file.metadata;
    if (const ch::Attribute* a = m.attr("ct_world_size")) {
      auto w = ch::attr_int(*a, inputs[i].path + ": GlobalMetadata");
      if (!w.is_ok()) return w.status();
      if (*w != world) {
        return Status::invalid_argument(inputs[i].path + ": GlobalMetadata: ct_world_size " + std::to_string(*w) +
                                        ", but " + std::to_string(world) +
                                        " file(s) were given (one per rank: give them all)");
      }
    }
    std::vector<std::string> streams;
    if (const ch::Attribute* a = m.attr("ct_streams")) {
      auto s = ch::attr_string_list(*a, inputs[i].path + ": GlobalMetadata");
      if (!s.is_ok()) return s.status();
      streams = *s;
    }
    if (i == 0) {
      ct_streams = streams;
    } else if (streams != ct_streams) {
      return Status::invalid_argument(inputs[i].path + ": GlobalMetadata: ct_streams differ from " + inputs[0].path +
                                      "'s");
    }
  }
  return ct_streams;
}

// Process groups: --comm-groups first, then those the PyTorch converter records in a METADATA_NODE;
// `from_metadata` counts the latter.
StatusOr<ChakraImportOptions> with_metadata_groups(const std::vector<ChakraInput>& inputs,
                                                   const ChakraImportOptions& options, int64_t* from_metadata) {
  const int world = static_cast<int>(inputs.size());
  ChakraImportOptions with_groups = options;
  for (const ChakraInput& in : inputs) {
    for (const ch::Node& n : in.file.nodes) {
      if (n.type != static_cast<int>(ch::NodeType::kMetadata)) continue;
      auto groups = metadata_process_groups(n, world);
      if (!groups.is_ok()) return groups.status().with_context(in.path + ": node " + std::to_string(n.id));
      for (auto& [name, members] : *groups) {
        if (with_groups.comm_groups.emplace(name, members).second) ++*from_metadata;
      }
    }
  }
  return with_groups;
}

// Each rank's tasks, in an order that respects its dependencies; `out` gains the files' counts.
StatusOr<std::vector<std::vector<RankTask>>> tasks_per_rank(const std::vector<ChakraInput>& inputs,
                                                            const std::vector<std::string>& ct_streams,
                                                            const ChakraImportOptions& options, ChakraImport* out) {
  const int world = static_cast<int>(inputs.size());
  std::vector<std::vector<RankTask>> per_rank(world);
  for (size_t i = 0; i < inputs.size(); ++i) {
    chakra_detail::FileCounts counts;
    auto tasks = chakra_detail::rank_tasks(inputs[i], out->file_rank[i], world, ct_streams, options, &counts);
    if (!tasks.is_ok()) return tasks.status();
    per_rank[out->file_rank[i]] = std::move(tasks).value();
    out->nodes += counts.nodes;
    out->skipped += counts.skipped;
    out->world_groups += counts.world_groups;
    out->ctrl_deps_ignored += counts.ctrl_deps_ignored;
  }
  return per_rank;
}

// The plan's system and variant: our export's, else "chakra" and the file's name without its rank.
void name_plan(const ChakraInput& first, Plan* plan) {
  plan->system = metadata_string(first.file.metadata, "ct_system");
  plan->variant = metadata_string(first.file.metadata, "ct_variant");
  if (plan->system.empty() && plan->variant.empty()) {
    plan->system = "chakra";
    plan->variant = variant_name(first.path);
  }
}

// The variants as tasks in `order`, without dependencies; returns each variant's task. Names: unique; a node that
// differs between ranks is named for its first rank after the first variant.
std::vector<int> add_variant_tasks(const MergedTasks& merged, const std::vector<int>& order, int world,
                                   ChakraImport* out) {
  Plan& plan = out->plan;
  std::vector<int> task_of(merged.variants.size());
  std::set<std::string> names;
  for (int v : order) {
    const Variant& var = merged.variants[v];
    Task t = var.task.task;
    t.id = static_cast<int>(plan.tasks.size());
    task_of[v] = t.id;
    if (merged.variants_of.at(var.task.task.name).front() != v) t.name += "@r" + std::to_string(var.ranks.front());
    if (names.count(t.name)) t.name += "~" + std::to_string(t.id);
    names.insert(t.name);
    auto stream = std::find(plan.streams.begin(), plan.streams.end(), var.task.stream);
    if (stream == plan.streams.end()) {
      plan.streams.push_back(var.task.stream);
      stream = plan.streams.end() - 1;
    }
    t.stream = static_cast<int>(stream - plan.streams.begin());
    t.ranks = rank_ranges(var.ranks, world);
    if (var.task.duration) {
      t.cost_key = t.name;
      out->durations[t.cost_key] = *var.task.duration;
      ++out->by_duration;
    } else if (var.task.by_flops) {
      ++out->by_flops;
    }
    plan.tasks.push_back(std::move(t));
  }
  return task_of;
}

// Dependencies: on each rank of a task, the variant that rank runs.
void add_variant_dependencies(const MergedTasks& merged, const std::vector<int>& order, const std::vector<int>& task_of,
                              Plan* plan) {
  for (int v : order) {
    Task& t = plan->tasks[task_of[v]];
    std::set<int> deps, prev;
    for (int r : merged.variants[v].ranks) {
      const std::unordered_map<std::string, int>& variant_at = merged.variant_at[r];
      // The merged lists name tasks some of these ranks do not run: each rank waits for those it runs.
      for (const std::string& d : merged.variants[v].task.deps)
        if (auto it = variant_at.find(d); it != variant_at.end()) deps.insert(task_of[it->second]);
      for (const std::string& d : merged.variants[v].task.prev_step_deps)
        if (auto it = variant_at.find(d); it != variant_at.end()) prev.insert(task_of[it->second]);
    }
    t.deps.assign(deps.begin(), deps.end());
    t.prev_step_deps.assign(prev.begin(), prev.end());
  }
}

}  // namespace

StatusOr<ChakraImport> plan_from_chakra(const std::vector<ChakraInput>& inputs, const ChakraImportOptions& options) {
  if (inputs.empty()) return Status::invalid_argument("import-chakra: no input file");
  ChakraImport out;
  const int world = static_cast<int>(inputs.size());
  out.world_size = world;
  auto ranks = input_ranks(inputs);
  if (!ranks.is_ok()) return ranks.status();
  out.file_rank = *ranks;
  auto ct_streams = exported_streams(inputs);
  if (!ct_streams.is_ok()) return ct_streams.status();
  auto with_groups = with_metadata_groups(inputs, options, &out.groups_from_metadata);
  if (!with_groups.is_ok()) return with_groups.status();
  auto per_rank = tasks_per_rank(inputs, *ct_streams, *with_groups, &out);
  if (!per_rank.is_ok()) return per_rank.status();
  const MergedTasks merged = chakra_detail::merge_rank_tasks(*per_rank);
  auto order = chakra_detail::merged_order(merged, *per_rank, inputs[0].path);
  if (!order.is_ok()) return order.status();

  Plan& plan = out.plan;
  name_plan(inputs[0], &plan);
  plan.streams = *ct_streams;
  out.exported_on = metadata_string(inputs[0].file.metadata, "ct_platform");
  const std::vector<int> task_of = add_variant_tasks(merged, *order, world, &out);
  add_variant_dependencies(merged, *order, task_of, &plan);
  if (plan.streams.empty()) plan.streams.push_back("compute");  // a plan needs one, even without tasks

  const std::string label = inputs.size() == 1 ? inputs[0].path : inputs[0].path + " (and the other ranks' files)";
  CT_RETURN_IF_ERROR(validate_plan(plan, label));
  const bool node_groups = std::any_of(plan.tasks.begin(), plan.tasks.end(), [](const Task& t) {
    return t.collective && t.collective->group.kind == GroupSpec::Kind::kNode;
  });
  // A node group's members depend on the platform: checked when the plan runs.
  if (!node_groups) CT_RETURN_IF_ERROR(validate_plan_for_world(plan, label, world, 1));
  return out;
}

StatusOr<std::map<std::string, std::vector<int>>> parse_comm_groups(const std::string& json_text,
                                                                    const std::string& name) {
  nlohmann::json j;
  try {  // nlohmann throws on a number beyond a double even when asked not to
    j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  } catch (const nlohmann::json::exception&) {
    j = nlohmann::json(nlohmann::json::value_t::discarded);
  }
  if (j.is_discarded() || !j.is_object()) {
    return Status::invalid_argument(name + ": not a communicator-group file (a JSON object: {\"1\": [0, 1], ...})");
  }
  std::map<std::string, std::vector<int>> out;
  for (const auto& [key, members] : j.items()) {
    if (!members.is_array() || members.empty()) {
      return Status::invalid_argument(name + ": group '" + key + "': expected a non-empty array of ranks, got " +
                                      members.dump());
    }
    std::vector<int> ranks;
    for (const auto& m : members) {
      if (!m.is_number_integer() || m.get<int64_t>() < 0 || m.get<int64_t>() > 1 << 24) {
        return Status::invalid_argument(name + ": group '" + key + "': rank " + m.dump() +
                                        " is not a rank (a non-negative integer)");
      }
      ranks.push_back(m.get<int>());
    }
    std::sort(ranks.begin(), ranks.end());
    if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
      return Status::invalid_argument(name + ": group '" + key + "' names a rank twice");
    }
    out[key] = std::move(ranks);
  }
  return out;
}

}  // namespace clustertwin::models
