// Platform::place: a job's view of a shared platform (sim mix). Kept apart
// from platform.cpp, which builds the platform, so that the two change
// independently.

#include <algorithm>
#include <set>

#include "sim/core/actor_pool.h"
#include "sim/core/platform.h"

namespace clustertwin::sim {

StatusOr<std::unique_ptr<Platform>> Platform::place(const cluster::ClusterProfile& profile,
                                                    const std::vector<int>& nodes, int workers,
                                                    const std::string& name) const {
  if (!has_node_aggregates()) {
    return Status::invalid_argument("platform file '" + profile_.simgrid_platform +
                                    "': a job cannot be placed on a SimGrid platform file (it has no nodes)");
  }
  // Before the division below: no workers would divide by zero.
  if (workers < 1)
    return Status::invalid_argument("job '" + name + "': " + std::to_string(workers) + " workers: at least 1");
  const int per_node = std::min(workers, devices_per_node_);
  const int needed = (workers + per_node - 1) / per_node;
  if (static_cast<int>(nodes.size()) != needed) {
    return Status::invalid_argument("job '" + name + "': " + std::to_string(workers) + " workers need " +
                                    std::to_string(needed) + " nodes of " + std::to_string(devices_per_node_) +
                                    " devices, " + std::to_string(nodes.size()) + " given");
  }
  std::set<int> seen;
  for (int node : nodes) {
    if (node < 0 || node >= this->nodes() || !seen.insert(node).second) {
      return Status::invalid_argument("job '" + name + "': node " + std::to_string(node) +
                                      (node < 0 || node >= this->nodes()
                                           ? " is not in the platform's " + std::to_string(this->nodes()) + " nodes"
                                           : " is given twice"));
    }
  }
  std::unique_ptr<Platform> view(new Platform(profile, workers));
  view->devices_per_node_ = per_node;
  view->devices_.resize(workers);
  view->cpus_.resize(workers);
  view->node_of_rank_.resize(workers);
  for (int r = 0; r < workers; ++r) {
    const int node = nodes[r / per_node];
    const int device = node * devices_per_node_ + r % per_node;  // the whole platform's rank
    view->devices_[r] = devices_[device];
    view->cpus_[r] = cpus_[device];
    view->node_of_rank_[r] = node;
  }
  // Indexed by the whole platform's nodes and groups, as node_of answers.
  view->pools_ = pools_;
  view->host_pools_ = host_pools_;
  view->node_endpoints_ = node_endpoints_;
  view->node_switches_ = node_switches_;
  view->group_endpoints_ = group_endpoints_;
  view->group_of_node_ = group_of_node_;
  view->group_merge_min_nodes_ = group_merge_min_nodes_;
  view->mailbox_prefix_ = name + ".flow";
  return view;
}

}  // namespace clustertwin::sim
