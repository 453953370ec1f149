#include "models/plan/plan_validator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>

#include "common/check.h"

namespace clustertwin::models {
namespace {

// An edge a -> b of one step's graph: a finishes before b starts.
struct Edge {
  int to = 0;
  bool stream_order = false;  // from the order of a stream rather than from b's deps
};

// The graph of one step (see the header) as out-edge lists, each in the order
// the edges were found. Requires valid stream and dep ids.
std::vector<std::vector<Edge>> step_graph(const Plan& plan) {
  std::vector<std::vector<Edge>> out(plan.tasks.size());
  std::vector<int> last_on_stream(plan.streams.size(), -1);
  for (const Task& t : plan.tasks) {
    for (int dep : t.deps)
      out[static_cast<size_t>(dep)].push_back({t.id, false});
    CT_CHECK(0 <= t.stream && t.stream < static_cast<int>(plan.streams.size())) << "task " << t.name;
    int& last = last_on_stream[t.stream];
    if (last >= 0) out[static_cast<size_t>(last)].push_back({t.id, true});
    last = t.id;
  }
  return out;
}

// "'a' -> 'b' -(stream order)-> 'a'" for the first cycle found, "" when none.
// A depth-first search from each unvisited task in id order, out-edges in
// order (iterative, so a long chain cannot overflow the call stack): the first
// edge into a task still on the search path closes a cycle.
std::string find_cycle(const Plan& plan) {
  const std::vector<std::vector<Edge>> graph = step_graph(plan);
  enum class Mark : char { kNew, kOnPath, kDone };
  std::vector<Mark> mark(graph.size(), Mark::kNew);
  std::vector<const Edge*> edge_into(graph.size(), nullptr);  // the tree edge that reached each task
  std::vector<int> parent(graph.size(), -1);
  std::vector<std::pair<int, size_t>> path;  // (task, next out-edge to follow)
  for (size_t root = 0; root < graph.size(); ++root) {
    if (mark[root] != Mark::kNew) continue;
    mark[root] = Mark::kOnPath;
    path.emplace_back(static_cast<int>(root), 0);
    while (!path.empty()) {
      auto& [u, next] = path.back();
      if (next == graph[static_cast<size_t>(u)].size()) {
        mark[static_cast<size_t>(u)] = Mark::kDone;
        path.pop_back();
        continue;
      }
      const Edge& e = graph[static_cast<size_t>(u)][next++];
      const size_t v = static_cast<size_t>(e.to);
      if (mark[v] == Mark::kNew) {
        mark[v] = Mark::kOnPath;
        edge_into[v] = &e;
        parent[v] = u;
        path.emplace_back(e.to, 0);
      } else if (mark[v] == Mark::kOnPath) {
        // u -> v meets v on the path to u: v -> ... -> u -> v.
        std::vector<std::pair<int, const Edge*>> cycle = {{u, &e}};
        for (int w = u; w != e.to; w = parent[static_cast<size_t>(w)])
          cycle.emplace_back(parent[static_cast<size_t>(w)], edge_into[static_cast<size_t>(w)]);
        std::reverse(cycle.begin(), cycle.end());
        std::string out = "'" + plan.tasks[v].name + "'";
        for (const auto& [from, edge] : cycle) {
          out += edge->stream_order ? " -(stream order)-> '" : " -> '";
          out += plan.tasks[static_cast<size_t>(edge->to)].name + "'";
        }
        return out;
      }
    }
  }
  return "";
}

std::string group_text(const GroupSpec& group) {
  switch (group.kind) {
    case GroupSpec::Kind::kWorld:
      return "world";
    case GroupSpec::Kind::kNode:
      return "node";
    case GroupSpec::Kind::kBlock:
      return "block(" + std::to_string(group.size) + ")";
    case GroupSpec::Kind::kStride:
      return "stride(" + std::to_string(group.size) +
             (group.span > 0 ? " within " + std::to_string(group.span) : std::string()) + ")";
  }
  return "group kind " + std::to_string(static_cast<int>(group.kind));
}

// "-5", "1.5e+12", "nan": short, for a message.
std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string range_text(const RankRange& range) {
  return "[" + std::to_string(range.begin) + ", " + std::to_string(range.end) + ")";
}

// Checks a list of task ids: in range, unique, and (for same-step deps) not the task itself.
std::optional<std::string> dep_list_error(const Plan& plan, const Task& t, const std::vector<int>& deps,
                                          std::string_view field, bool same_step) {
  std::set<int> seen;
  for (int dep : deps) {
    if (dep < 0 || dep >= static_cast<int>(plan.tasks.size())) {
      return std::string(field) + " " + std::to_string(dep) + " does not exist (the plan has " +
             std::to_string(plan.tasks.size()) + " tasks)";
    }
    if (same_step && dep == t.id) return "depends on itself";
    if (!seen.insert(dep).second) return std::string(field) + " '" + plan.tasks[dep].name + "' is listed twice";
  }
  return std::nullopt;
}

std::optional<std::string> collective_error(const Task& t) {
  const Collective& c = *t.collective;
  const bool sized = c.group.kind == GroupSpec::Kind::kBlock || c.group.kind == GroupSpec::Kind::kStride;
  if (sized && c.group.size < 1) return "group " + group_text(c.group) + ": the size must be >= 1";
  if (!sized && c.group.size != 0) {
    return "group " + group_text(c.group) + " takes no size (got " + std::to_string(c.group.size) + ")";
  }
  if (c.group.kind != GroupSpec::Kind::kStride && c.group.span != 0)
    return "group " + group_text(c.group) + " takes no span (got " + std::to_string(c.group.span) + ")";
  if (c.group.span < 0 || (c.group.span > 0 && c.group.size >= 1 && c.group.span % c.group.size != 0)) {
    return "group " + group_text(c.group) + ": the span " + std::to_string(c.group.span) +
           " must be 0 (the world) or a positive multiple of the stride";
  }
  if (c.root < 0) return "root " + std::to_string(c.root) + " must be >= 0";
  if (!c.split_bytes.empty() && c.op != CollectiveOp::kAllToAll) {
    return "split_bytes is only for alltoall, not " + std::string(collective_op_name(c.op));
  }
  for (size_t i = 0; i < c.split_bytes.size(); ++i) {
    if (c.split_bytes[i] < 0) {
      return "split_bytes[" + std::to_string(i) + "] is " + std::to_string(c.split_bytes[i]) + " (must be >= 0)";
    }
  }
  return std::nullopt;
}

// The problem with one task of a plan, independent of the world; nullopt when none.
std::optional<std::string> task_error(const Plan& plan, const Task& t) {
  if (t.stream < 0 || t.stream >= static_cast<int>(plan.streams.size())) {
    return "stream " + std::to_string(t.stream) + " does not exist (the plan has " +
           std::to_string(plan.streams.size()) + " streams)";
  }
  if (!std::isfinite(t.flops) || t.flops < 0) return "flops " + number_text(t.flops) + " must be finite and >= 0";
  if (t.bytes < 0) return "bytes " + std::to_string(t.bytes) + " must be >= 0";
  if (auto e = dep_list_error(plan, t, t.deps, "dep", true)) return e;
  if (auto e = dep_list_error(plan, t, t.prev_step_deps, "prev_step_dep", false)) return e;
  if (t.micro_batch < -1) return "micro_batch " + std::to_string(t.micro_batch) + " must be >= -1";
  if (t.batch_offset < 0) return "batch_offset " + std::to_string(t.batch_offset) + " must be >= 0";
  if (t.requests < 0) return "requests " + std::to_string(t.requests) + " must be >= 0";
  if (t.grad_bytes < 0) return "grad_bytes " + std::to_string(t.grad_bytes) + " must be >= 0";
  if (t.launches < 0) return "launches " + std::to_string(t.launches) + " must be >= 0";
  for (const RankRange& range : t.ranks) {
    if (range.begin < 0 || range.end < -1 || (range.end != -1 && range.end <= range.begin)) {
      return "rank range " + range_text(range) + " is not [begin, end) with 0 <= begin < end (or end -1)";
    }
  }
  const bool is_collective = t.kind == TaskKind::kCollective;
  if (is_collective && !t.collective) return "kind collective needs a 'collective' descriptor";
  if (!is_collective && t.collective) {
    return "kind " + std::string(task_kind_name(t.kind)) + " must not have a 'collective' descriptor";
  }
  return t.collective ? collective_error(t) : std::nullopt;
}

int positive_mod(int64_t value, int modulus) {
  return static_cast<int>(((value % modulus) + modulus) % modulus);
}

// Every kind of group splits the world into disjoint groups; a collective
// is run by all members of a group or by none.
std::optional<std::string> partial_group_error(const GroupSpec& spec, const std::vector<char>& runs,
                                               int devices_per_node) {
  const int world = static_cast<int>(runs.size());
  std::vector<char> seen(world, 0);
  for (int r = 0; r < world; ++r) {
    if (seen[r]) continue;
    int running = -1, idle = -1;
    for (int m : group_members(spec, r, world, devices_per_node)) {
      seen[m] = 1;
      int& first = runs[m] ? running : idle;
      if (first < 0) first = m;
    }
    if (running >= 0 && idle >= 0) {
      return "collective joined by only part of its group: rank " + std::to_string(idle) + " is in the " +
             group_text(spec) + " group of rank " + std::to_string(running) + " but does not run the task";
    }
  }
  return std::nullopt;
}

// True when ranks a and b are in one group; O(1), where group_members is
// O(group size) and the peers of every rank of a large world are checked.
bool same_group(const GroupSpec& spec, int a, int b, int world, int devices_per_node) {
  switch (spec.kind) {
    case GroupSpec::Kind::kWorld:
      return true;
    case GroupSpec::Kind::kNode:
      return world < devices_per_node || a / devices_per_node == b / devices_per_node;
    case GroupSpec::Kind::kBlock:
      return a / spec.size == b / spec.size;
    case GroupSpec::Kind::kStride:
      return a % spec.size == b % spec.size && (spec.span == 0 || a / spec.span == b / spec.span);
  }
  return false;
}

// Send and recv involve two ranks only; the group bounds where the peer may be.
std::optional<std::string> peer_error(const Collective& c, const std::vector<char>& runs, int devices_per_node) {
  const int world = static_cast<int>(runs.size());
  for (int r = 0; r < world; ++r) {
    if (!runs[r]) continue;
    const int peer = positive_mod(int64_t{r} + c.peer_offset, world);
    if (peer == r) {
      return "peer_offset " + std::to_string(c.peer_offset) + " makes rank " + std::to_string(r) + " its own peer";
    }
    if (!same_group(c.group, r, peer, world, devices_per_node)) {
      return "peer rank " + std::to_string(peer) + " of rank " + std::to_string(r) + " is outside its " +
             group_text(c.group) + " group";
    }
  }
  return std::nullopt;
}

// The problem with one collective task in a world of `world` ranks; nullopt when none.
std::optional<std::string> collective_world_error(const Task& t, int world, int devices_per_node) {
  const Collective& c = *t.collective;
  const std::string group = group_text(c.group);
  const std::string world_text = "the world of " + std::to_string(world) + " ranks";
  if ((c.group.kind == GroupSpec::Kind::kBlock || c.group.kind == GroupSpec::Kind::kStride) &&
      world % c.group.size != 0) {
    return "group " + group + " does not divide " + world_text;
  }
  if (c.group.span > 0 && world % c.group.span != 0)
    return "group " + group + ": the span does not divide " + world_text;
  if (c.group.kind == GroupSpec::Kind::kNode && world >= devices_per_node && world % devices_per_node != 0) {
    return "group node: " + world_text + " is not a whole number of nodes of " + std::to_string(devices_per_node) +
           " ranks";
  }
  std::vector<char> runs(world);
  for (int r = 0; r < world; ++r)
    runs[r] = runs_on(t, r, world);
  if (c.op == CollectiveOp::kSend || c.op == CollectiveOp::kRecv) return peer_error(c, runs, devices_per_node);
  if (auto e = partial_group_error(c.group, runs, devices_per_node)) return e;
  const size_t group_size = group_members(c.group, 0, world, devices_per_node).size();
  const std::string members = "its " + group + " group has " + std::to_string(group_size) + " members";
  if (!c.split_bytes.empty()) {
    if (c.split_bytes.size() != group_size) {
      return "split_bytes has " + std::to_string(c.split_bytes.size()) + " entries, but " + members;
    }
    int64_t sum = 0;
    for (int64_t b : c.split_bytes)
      sum += b;
    if (sum != t.bytes)
      return "split_bytes sums to " + std::to_string(sum) + ", but bytes is " + std::to_string(t.bytes);
  }
  if (c.op == CollectiveOp::kBroadcast && c.root >= static_cast<int>(group_size)) {
    return "root " + std::to_string(c.root) + " is outside the group: " + members;
  }
  return std::nullopt;
}

// Every send from rank s to rank d with tag t needs a recv at d from s with
// tag t, one for one; returns the first that has none.
std::optional<std::string> unmatched_point_to_point(const Plan& plan, int world) {
  struct Ends {
    std::vector<int> sends, recvs;  // task ids
  };
  std::map<std::tuple<int, int, int>, Ends> by_channel;  // (source, destination, tag)
  for (const Task& t : plan.tasks) {
    if (!t.collective || (t.collective->op != CollectiveOp::kSend && t.collective->op != CollectiveOp::kRecv)) continue;
    const bool send = t.collective->op == CollectiveOp::kSend;
    for (int r = 0; r < world; ++r) {
      if (!runs_on(t, r, world)) continue;
      const int peer = positive_mod(int64_t{r} + t.collective->peer_offset, world);
      Ends& ends = by_channel[send ? std::tuple(r, peer, t.collective->tag) : std::tuple(peer, r, t.collective->tag)];
      (send ? ends.sends : ends.recvs).push_back(t.id);
    }
  }
  for (const auto& [channel, ends] : by_channel) {
    const auto& [source, destination, tag] = channel;
    const std::string tag_text = " (tag " + std::to_string(tag) + ")";
    if (ends.sends.size() > ends.recvs.size()) {
      return "send '" + plan.tasks[ends.sends[ends.recvs.size()]].name + "' from rank " + std::to_string(source) +
             " to rank " + std::to_string(destination) + tag_text + " has no matching recv";
    }
    if (ends.recvs.size() > ends.sends.size()) {
      return "recv '" + plan.tasks[ends.recvs[ends.sends.size()]].name + "' at rank " + std::to_string(destination) +
             " from rank " + std::to_string(source) + tag_text + " has no matching send";
    }
  }
  return std::nullopt;
}

}  // namespace

Status validate_plan(const Plan& plan, const std::string& name) {
  const auto fail = [&name](const std::string& message) { return Status::invalid_argument(name + ": " + message); };
  if (plan.streams.empty()) return fail("the plan has no streams (it needs at least one)");
  std::map<std::string, int> stream_ids;
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    if (plan.streams[i].empty()) return fail("stream " + std::to_string(i) + " has an empty name");
    const auto [it, inserted] = stream_ids.emplace(plan.streams[i], static_cast<int>(i));
    if (!inserted) {
      return fail("streams " + std::to_string(it->second) + " and " + std::to_string(i) + " are both named '" +
                  plan.streams[i] + "'");
    }
  }
  if (plan.tasks.empty()) return fail("the plan has no tasks (a step of nothing has no time to measure)");
  std::map<std::string, int> task_ids;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const Task& t = plan.tasks[i];
    const std::string where = "tasks[" + std::to_string(i) + "]";
    if (t.id != static_cast<int>(i)) return fail(where + " has id " + std::to_string(t.id) + " (must be its position)");
    if (t.name.empty()) return fail(where + " has an empty name");
    const auto [it, inserted] = task_ids.emplace(t.name, t.id);
    if (!inserted) {
      return fail("tasks " + std::to_string(it->second) + " and " + std::to_string(i) + " are both named '" + t.name +
                  "'");
    }
  }
  for (const Task& t : plan.tasks) {
    if (auto e = task_error(plan, t)) return fail("task '" + t.name + "': " + *e);
  }
  if (const std::string cycle = find_cycle(plan); !cycle.empty()) return fail("dependency cycle: " + cycle);
  return Status::ok();
}

Status validate_plan_for_world(const Plan& plan, const std::string& name, int world_size, int devices_per_node) {
  const auto fail = [&name](const std::string& message) { return Status::invalid_argument(name + ": " + message); };
  if (world_size < 1) return fail("world size " + std::to_string(world_size) + " must be >= 1");
  if (devices_per_node < 1) return fail("devices per node " + std::to_string(devices_per_node) + " must be >= 1");
  for (const Task& t : plan.tasks) {
    for (const RankRange& range : t.ranks) {
      const int end = range.end == -1 ? world_size : range.end;
      if (range.begin >= end || end > world_size) {
        return fail("task '" + t.name + "': rank range " + range_text(range) + " does not fit in the world of " +
                    std::to_string(world_size) + " ranks");
      }
    }
    if (!t.collective) continue;
    if (auto e = collective_world_error(t, world_size, devices_per_node)) return fail("task '" + t.name + "': " + *e);
  }
  if (auto e = unmatched_point_to_point(plan, world_size)) return fail(*e);
  return Status::ok();
}

std::vector<int> topological_order(const Plan& plan) {
  const std::vector<std::vector<Edge>> graph = step_graph(plan);
  std::vector<int> waiting_for(plan.tasks.size(), 0);  // in-degree
  for (const std::vector<Edge>& out : graph)
    for (const Edge& e : out)
      ++waiting_for[static_cast<size_t>(e.to)];
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t v = 0; v < waiting_for.size(); ++v) {
    if (waiting_for[v] == 0) ready.push(static_cast<int>(v));
  }
  std::vector<int> order;
  order.reserve(plan.tasks.size());
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order.push_back(v);
    for (const Edge& e : graph[static_cast<size_t>(v)]) {
      if (--waiting_for[static_cast<size_t>(e.to)] == 0) ready.push(e.to);
    }
  }
  CT_CHECK(order.size() == plan.tasks.size()) << "topological_order of a plan with a cycle: " << find_cycle(plan);
  return order;
}

double critical_path_seconds(const Plan& plan, const std::function<double(const Task&)>& duration) {
  const std::vector<std::vector<Edge>> graph = step_graph(plan);
  std::vector<double> earliest_start(plan.tasks.size(), 0.0);
  double longest = 0.0;
  for (int v : topological_order(plan)) {
    const double finish = earliest_start[v] + duration(plan.tasks[v]);
    longest = std::max(longest, finish);
    for (const Edge& e : graph[static_cast<size_t>(v)]) {
      double& start = earliest_start[static_cast<size_t>(e.to)];
      start = std::max(start, finish);
    }
  }
  return longest;
}

}  // namespace clustertwin::models
