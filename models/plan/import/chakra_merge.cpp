// Every rank's tasks of a Chakra import merged into one task order (chakra_node.h).

#include <algorithm>
#include <iterator>
#include <queue>

#include "models/plan/import/chakra_node.h"

namespace clustertwin::models::chakra_detail {
namespace {

// `extra` names tasks `a` waits for and `b` does not: each must be absent from all of b's ranks.
bool absent_on(const std::vector<std::unordered_set<std::string>>& names_on, const std::vector<std::string>& a,
               const std::vector<std::string>& b, const std::vector<int>& ranks) {
  std::vector<std::string> extra;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(extra));
  for (const std::string& d : extra)
    for (int r : ranks)
      if (names_on[r].count(d)) return false;
  return true;
}

std::vector<std::string> merged_names(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

MergedTasks merge_rank_tasks(const std::vector<std::vector<RankTask>>& per_rank) {
  const int world = static_cast<int>(per_rank.size());
  std::vector<std::unordered_set<std::string>> names_on(world);
  for (int r = 0; r < world; ++r)
    for (const RankTask& t : per_rank[r])
      names_on[r].insert(t.task.name);
  MergedTasks m;
  m.variant_at.resize(world);
  std::vector<Variant>& variants = m.variants;
  for (int r = 0; r < world; ++r) {
    for (size_t pos = 0; pos < per_rank[r].size(); ++pos) {
      const RankTask& t = per_rank[r][pos];
      int found = -1;
      for (int v : m.variants_of[t.task.name]) {
        RankTask& u = variants[v].task;
        const std::vector<int> here = {r};
        if (u.same_but_deps(t) && absent_on(names_on, t.deps, u.deps, variants[v].ranks) &&
            absent_on(names_on, u.deps, t.deps, here) &&
            absent_on(names_on, t.prev_step_deps, u.prev_step_deps, variants[v].ranks) &&
            absent_on(names_on, u.prev_step_deps, t.prev_step_deps, here)) {
          found = v;
          u.deps = merged_names(u.deps, t.deps);
          u.prev_step_deps = merged_names(u.prev_step_deps, t.prev_step_deps);
          break;
        }
      }
      if (found < 0) {
        found = static_cast<int>(variants.size());
        variants.push_back({t, {}, pos});
        m.variants_of[t.task.name].push_back(found);
      }
      variants[found].ranks.push_back(r);
      variants[found].key = std::min(variants[found].key, pos);
      m.variant_at[r][t.task.name] = found;
    }
  }
  return m;
}

StatusOr<std::vector<int>> merged_order(const MergedTasks& merged, const std::vector<std::vector<RankTask>>& per_rank,
                                        const std::string& path) {
  const std::vector<Variant>& variants = merged.variants;
  std::vector<std::vector<int>> next(variants.size());
  std::vector<int> indegree(variants.size(), 0);
  for (size_t r = 0; r < per_rank.size(); ++r) {
    std::unordered_map<std::string, int> last_on_stream;
    for (const RankTask& t : per_rank[r]) {
      const int v = merged.variant_at[r].at(t.task.name);
      if (auto it = last_on_stream.find(t.stream); it != last_on_stream.end()) {
        next[it->second].push_back(v);
        ++indegree[v];
      }
      last_on_stream[t.stream] = v;
    }
  }
  using Ready = std::pair<size_t, int>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (size_t v = 0; v < variants.size(); ++v)
    if (indegree[v] == 0) ready.push({variants[v].key, static_cast<int>(v)});
  std::vector<int> order;
  while (!ready.empty()) {
    const int v = ready.top().second;
    ready.pop();
    order.push_back(v);
    for (int w : next[v])
      if (--indegree[w] == 0) ready.push({variants[w].key, w});
  }
  if (order.size() != variants.size()) {
    for (size_t v = 0; v < variants.size(); ++v) {
      if (indegree[v] > 0) {
        return Status::invalid_argument(path + " (and the other ranks' files): the ranks order '" +
                                        variants[v].task.task.name +
                                        "' differently with respect to the nodes they share");
      }
    }
  }
  return order;
}

}  // namespace clustertwin::models::chakra_detail
