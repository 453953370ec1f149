#include "calibrators/step_wait.h"

#include <algorithm>
#include <set>
#include <string>

namespace clustertwin::calibrators {

std::map<models::CollectiveOp, std::map<int, double>> measure_step_waits(const std::vector<CollectiveSample>& samples,
                                                                         const NetworkFitOptions& options) {
  std::set<int> counts;
  for (const CollectiveSample& s : samples)
    counts.insert(s.group_size);
  std::map<models::CollectiveOp, std::map<int, double>> waits;
  for (int n : counts) {
    std::vector<CollectiveSample> at_n;
    std::copy_if(samples.begin(), samples.end(), std::back_inserter(at_n),
                 [n](const CollectiveSample& s) { return s.group_size == n; });
    for (const NetworkFit& fit : fit_network(at_n, options)) {
      const double steps = cluster::latency_steps(fit.op, n);
      if (fit.points.empty() || steps <= 0) continue;
      // The points are sorted by size: the first is the smallest message, its fitted time the segment's line
      // there (which its neighbours steady), not its mean alone.
      waits[fit.op][n] = fit.points.front().fitted_s / steps;
    }
  }
  return waits;
}

std::map<std::string, double> measure_run_key_waits(const std::vector<TaskSample>& samples) {
  std::map<std::string, std::pair<double, double>> sums;  // key -> off-CPU seconds, latency steps
  for (const TaskSample& s : samples) {
    if (!s.op || !s.cpu_s || s.steps <= 0) continue;
    auto& [off_cpu, steps] = sums[s.cost_key];
    off_cpu += std::max(0.0, s.met_s.value_or(s.seconds) - *s.cpu_s);
    steps += s.steps;
  }
  std::map<std::string, double> waits;
  for (const auto& [key, sum] : sums)
    waits[key] = sum.first / sum.second;
  return waits;
}

bool add_run_step_waits_by_default(const std::vector<TaskSample>& samples, cluster::ClusterProfile* profile) {
  if (profile->node_cores <= 0 || has_step_waits(*profile)) return false;
  const auto waits = measure_run_key_waits(samples);
  add_key_waits(waits, profile);
  return !waits.empty();
}

void add_key_waits(const std::map<std::string, double>& waits, cluster::ClusterProfile* profile) {
  for (const auto& [key, seconds] : waits)
    profile->costs[key].step_wait = seconds;
}

bool has_step_waits(const cluster::ClusterProfile& profile) {
  return std::any_of(profile.collectives.begin(), profile.collectives.end(),
                     [](const auto& op) { return !op.second.step_wait.empty(); }) ||
         std::any_of(profile.costs.begin(), profile.costs.end(),
                     [](const auto& key) { return key.second.step_wait > 0; });
}

void add_step_waits(const std::map<models::CollectiveOp, std::map<int, double>>& waits,
                    cluster::ClusterProfile* profile) {
  for (const auto& [op, by_ranks] : waits)
    profile->collectives[std::string(models::collective_op_name(op))].step_wait = by_ranks;
}

void remove_step_waits(const cluster::ClusterProfile& profile, std::vector<TaskSample>* samples) {
  if (profile.node_cores <= 0) return;
  for (TaskSample& s : *samples) {
    if (!s.op) continue;
    auto key = profile.costs.find(s.cost_key);
    if (key != profile.costs.end() && key->second.step_wait > 0) {
      s.wait_s = std::min(s.seconds, s.steps * key->second.step_wait);
      s.seconds -= s.wait_s;
      continue;
    }
    auto f = profile.collectives.find(std::string(models::collective_op_name(*s.op)));
    if (f == profile.collectives.end() || f->second.step_wait.empty()) continue;
    const int on_node = std::min(s.world, profile.devices_per_node);
    const double wait = s.steps * f->second.step_wait_at(on_node);
    s.wait_s = std::min(s.seconds, wait);
    s.seconds -= s.wait_s;
  }
}

}  // namespace clustertwin::calibrators
