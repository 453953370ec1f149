#include "sim/core/collective_shortcut.h"

#include "sim/core/sim_options.h"

namespace clustertwin::sim {

bool exclusive_network(const models::Plan& plan, const SimOptions& options, int devices_per_node,
                       const std::vector<std::vector<double>>& seconds) {
  if (!options.collective_shortcut) return false;
  int stream = -1;
  for (const models::Task& t : plan.tasks) {
    if (t.kind != models::TaskKind::kCollective) continue;
    // Priced by a cost key or a fitted network: a wait, no flows (price_plan fills a task's row with one value).
    if (seconds[t.id].empty() || seconds[t.id][0] >= 0) continue;
    const models::Collective& c = *t.collective;
    if (c.op == models::CollectiveOp::kSend || c.op == models::CollectiveOp::kRecv) return false;
    if (!t.ranks.empty()) return false;
    if (static_cast<int>(models::group_members(c.group, 0, options.workers, devices_per_node).size()) !=
        options.workers)
      return false;
    if (stream >= 0 && t.stream != stream) return false;
    stream = t.stream;
  }
  return true;
}

CollectivePrices::Key CollectivePrices::key(const models::Collective& effective, int64_t bytes, int first_member) {
  return {static_cast<int>(effective.op),
          static_cast<int>(effective.group.kind),
          effective.group.size,
          static_cast<int>(effective.algorithm),
          effective.root,
          bytes,
          effective.split_bytes,
          first_member};
}

std::optional<double> CollectivePrices::find(const Key& key) const {
  auto it = seconds_.find(key);
  if (it == seconds_.end()) return std::nullopt;
  return it->second;
}

}  // namespace clustertwin::sim
