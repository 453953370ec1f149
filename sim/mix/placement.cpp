#include "sim/mix/placement.h"

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>

namespace clustertwin::sim::mix {

std::vector<int> pod_of_nodes(const cluster::ClusterProfile& profile) {
  std::vector<int> pod(profile.nodes, 0);
  if (profile.topology.kind == cluster::Topology::Kind::kSingleSwitch) return pod;
  const int per_pod = std::max(1, profile.topology.nodes_per_leaf);
  for (int n = 0; n < profile.nodes; ++n)
    pod[n] = n / per_pod;
  return pod;
}

StatusOr<std::vector<std::vector<int>>> place_jobs(const MixSpec& mix, const cluster::ClusterProfile& profile,
                                                   const std::string& policy, uint64_t seed) {
  if (policy != "packed" && policy != "spread" && policy != "random")
    return Status::invalid_argument("placement '" + policy + "': unknown policy (allowed: packed, spread, random)");
  std::set<int> taken;
  for (const JobSpec& job : mix.jobs)
    taken.insert(job.nodes.begin(), job.nodes.end());
  std::vector<int> free;
  for (int n = 0; n < profile.nodes; ++n) {
    if (taken.count(n) == 0) free.push_back(n);
  }
  if (policy == "random") {
    // Fisher-Yates with the standard's fully specified engine (std::shuffle's algorithm is the library's choice).
    std::mt19937_64 rng(seed);
    for (size_t i = free.size(); i > 1; --i)
      std::swap(free[i - 1], free[rng() % i]);
  }
  // Spread: the free nodes of each pod, taken one pod after the other.
  const std::vector<int> pod = pod_of_nodes(profile);
  std::map<int, std::deque<int>> by_pod;
  for (int n : free)
    by_pod[pod[n]].push_back(n);
  auto next_pod = by_pod.begin();

  std::vector<std::vector<int>> out;
  size_t cursor = 0;  // packed and random: the next free node
  for (const JobSpec& job : mix.jobs) {
    if (!job.nodes.empty()) {
      out.push_back(job.nodes);
      continue;
    }
    const int needed = nodes_needed(profile, job.workers);
    std::vector<int> nodes;
    if (policy == "spread") {
      while (static_cast<int>(nodes.size()) < needed) {
        if (next_pod == by_pod.end()) next_pod = by_pod.begin();
        if (!next_pod->second.empty()) {
          nodes.push_back(next_pod->second.front());
          next_pod->second.pop_front();
        }
        ++next_pod;
      }
    } else {
      nodes.assign(free.begin() + static_cast<long>(cursor), free.begin() + static_cast<long>(cursor + needed));
      cursor += needed;
    }
    std::sort(nodes.begin(), nodes.end());
    out.push_back(std::move(nodes));
  }
  return out;
}

}  // namespace clustertwin::sim::mix
