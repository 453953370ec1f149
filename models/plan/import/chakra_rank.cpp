// One rank's Chakra file to tasks in the order its streams run them (chakra_node.h).

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>

#include "common/text.h"
#include "models/plan/import/chakra_node.h"

namespace clustertwin::models::chakra_detail {
namespace {
namespace ch = traces::chakra;

using Positions = std::unordered_map<uint64_t, size_t>;  // node id -> its position in the file

std::string node_where(const std::string& path, const ch::Node& n) {
  return path + ": node " + std::to_string(n.id) + " (" + quote_for_message(n.name) + ")";
}

StatusOr<Positions> node_positions(const std::vector<ch::Node>& nodes, const std::string& path) {
  Positions position;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto [it, inserted] = position.emplace(nodes[i].id, i);
    if (!inserted) {
      return Status::invalid_argument(path + ": node id " + std::to_string(nodes[i].id) + " is used by node messages " +
                                      std::to_string(it->second + 1) + " and " + std::to_string(i + 1));
    }
  }
  return position;
}

// Dependencies by position; a node waits for its data_deps (and ctrl_deps when asked).
StatusOr<std::vector<std::vector<size_t>>> node_dependencies(const std::vector<ch::Node>& nodes,
                                                             const Positions& position, const std::string& path,
                                                             const ChakraImportOptions& options, FileCounts* counts) {
  std::vector<std::vector<size_t>> deps(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto add = [&](const std::vector<uint64_t>& ids, const char* field) -> Status {
      for (uint64_t d : ids) {
        auto it = position.find(d);
        if (it == position.end()) {
          return Status::invalid_argument(node_where(path, nodes[i]) + ": " + field + " names node " +
                                          std::to_string(d) + ", which is not in the file");
        }
        deps[i].push_back(it->second);
      }
      return Status::ok();
    };
    CT_RETURN_IF_ERROR(add(nodes[i].data_deps, "data_deps"));
    if (options.ctrl_deps) {
      CT_RETURN_IF_ERROR(add(nodes[i].ctrl_deps, "ctrl_deps"));
    } else {
      counts->ctrl_deps_ignored += static_cast<int64_t>(nodes[i].ctrl_deps.size());
    }
  }
  return deps;
}

// Topological order, ties by file position.
StatusOr<std::vector<size_t>> dependency_order(const std::vector<ch::Node>& nodes,
                                               const std::vector<std::vector<size_t>>& deps, const std::string& path) {
  std::vector<std::vector<size_t>> users(nodes.size());
  std::vector<size_t> waiting(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t d : deps[i])
      users[d].push_back(i);
    waiting[i] = deps[i].size();
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (waiting[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--waiting[u] == 0) ready.push(u);
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (waiting[i] > 0) return Status::invalid_argument(node_where(path, nodes[i]) + ": on a dependency cycle");
  }
  return order;
}

// Names: a name used more than once (or none) gets #k, its occurrence in the file: the k-th "aten::mm" or
// all-reduce of one rank is the k-th of another, whatever the node ids.
std::vector<std::string> task_names(const std::vector<ch::Node>& nodes) {
  std::unordered_map<std::string, int> uses, seen;
  for (const ch::Node& n : nodes)
    if (!skipped_type(n.type)) ++uses[n.name.empty() ? "node" : n.name];
  std::vector<std::string> names(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (skipped_type(nodes[i].type)) continue;
    const std::string base = nodes[i].name.empty() ? "node" : nodes[i].name;
    const int k = ++seen[base];
    names[i] = uses[base] > 1 || nodes[i].name.empty() ? base + "#" + std::to_string(k) : base;
  }
  return names;
}

// Skipped nodes pass their own dependencies on.
std::vector<std::vector<size_t>> bypass_skipped(const std::vector<ch::Node>& nodes,
                                                const std::vector<std::vector<size_t>>& deps,
                                                const std::vector<size_t>& order) {
  std::vector<std::vector<size_t>> resolved(nodes.size());
  for (size_t i : order) {
    std::set<size_t> mine;
    for (size_t d : deps[i]) {
      if (skipped_type(nodes[d].type)) {
        mine.insert(resolved[d].begin(), resolved[d].end());
      } else {
        mine.insert(d);
      }
    }
    resolved[i].assign(mine.begin(), mine.end());
  }
  return resolved;
}

// `n`'s ct_prev_step_deps (our export's) as task names, sorted, into `task`.
Status add_prev_step_deps(const ch::Node& n, const std::vector<ch::Node>& nodes, const Positions& position,
                          const std::vector<std::string>& names, const std::string& path, RankTask* task) {
  const ch::Attribute* a = n.attr("ct_prev_step_deps");
  if (a == nullptr) return Status::ok();
  auto prev = ch::attr_int_list(*a, node_where(path, n));
  if (!prev.is_ok()) return prev.status();
  for (int64_t d : *prev) {
    auto it = position.find(static_cast<uint64_t>(d));
    if (d < 0 || it == position.end()) {
      return Status::invalid_argument(node_where(path, n) + ": ct_prev_step_deps names node " + std::to_string(d) +
                                      ", which is not in the file");
    }
    if (!skipped_type(nodes[it->second].type)) task->prev_step_deps.push_back(names[it->second]);
  }
  std::sort(task->prev_step_deps.begin(), task->prev_step_deps.end());
  return Status::ok();
}

// True when the tasks (by file position; skipped nodes none) can run on each stream in the file's order: no
// task would then wait on its stream for one that depends on it.
bool file_order_runs(const std::vector<std::optional<RankTask>>& tasks, const std::vector<size_t>& file_order,
                     const std::vector<std::vector<size_t>>& resolved) {
  std::vector<std::vector<size_t>> after(tasks.size());
  std::vector<size_t> before(tasks.size(), 0);
  std::unordered_map<std::string, size_t> last;
  for (size_t i : file_order) {
    if (auto it = last.find(tasks[i]->stream); it != last.end()) {
      after[it->second].push_back(i);
      ++before[i];
    }
    last[tasks[i]->stream] = i;
    for (size_t d : resolved[i]) {
      after[d].push_back(i);
      ++before[i];
    }
  }
  std::vector<size_t> queue;
  for (size_t i : file_order)
    if (before[i] == 0) queue.push_back(i);
  size_t visited = 0;
  while (!queue.empty()) {
    const size_t i = queue.back();
    queue.pop_back();
    ++visited;
    for (size_t j : after[i])
      if (--before[j] == 0) queue.push_back(j);
  }
  return visited == file_order.size();
}

}  // namespace

StatusOr<std::vector<RankTask>> rank_tasks(const ChakraInput& input, int rank, int world,
                                           const std::vector<std::string>& ct_streams,
                                           const ChakraImportOptions& options, FileCounts* counts) {
  const std::vector<ch::Node>& nodes = input.file.nodes;
  const std::string& path = input.path;
  auto position = node_positions(nodes, path);
  if (!position.is_ok()) return position.status();
  counts->nodes += static_cast<int64_t>(nodes.size());
  auto deps = node_dependencies(nodes, *position, path, options, counts);
  if (!deps.is_ok()) return deps.status();
  auto order = dependency_order(nodes, *deps, path);
  if (!order.is_ok()) return order.status();
  const std::vector<std::string> names = task_names(nodes);
  const std::vector<std::vector<size_t>> resolved = bypass_skipped(nodes, *deps, *order);

  std::vector<std::optional<RankTask>> tasks(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ch::Node& n = nodes[i];
    if (skipped_type(n.type)) {
      ++counts->skipped;
      continue;
    }
    auto task = convert_node(n, names[i], rank, world, ct_streams, options, path, counts);
    if (!task.is_ok()) return task.status();
    for (size_t d : resolved[i])
      task->deps.push_back(names[d]);
    std::sort(task->deps.begin(), task->deps.end());
    CT_RETURN_IF_ERROR(add_prev_step_deps(n, nodes, *position, names, path, &task.value()));
    tasks[i] = std::move(task).value();
  }

  // The order of the tasks on each stream: the file's (a plan's own order, as our export writes it) unless a
  // task would then wait on its stream for one that depends on it, which the dependencies' order avoids.
  std::vector<size_t> file_order;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (tasks[i]) file_order.push_back(i);
  std::vector<RankTask> out;
  for (size_t i : file_order_runs(tasks, file_order, resolved) ? file_order : *order)
    if (tasks[i]) out.push_back(std::move(*tasks[i]));
  return out;
}

}  // namespace clustertwin::models::chakra_detail
