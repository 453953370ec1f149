// The shared-core fit (fit_shared_cores): each cost key's cost scaled by
// real / twin, simulating the recorded runs round by round, until the twin
// gives every key the time the runs recorded. Also the twin's per-key means
// (replay_internal.h) that it and the replay compare against.
#include "calibrators/shared_core_fit.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "calibrators/replay_internal.h"
#include "calibrators/task_fit.h"
#include "sim/core/simulator.h"

namespace clustertwin::calibrators::detail {

std::map<std::string, double> twin_key_means(const models::Plan& plan, const sim::SimResult& twin) {
  std::map<std::string, std::pair<double, int>> sums;
  for (size_t i = 0; i < plan.tasks.size() && i < twin.tasks.size(); ++i) {
    const std::string& key = plan.tasks[i].cost_key;
    if (key.empty()) continue;
    sums[key].first += twin.tasks[i].mean_s;
    ++sums[key].second;
  }
  std::map<std::string, double> means;
  for (const auto& [key, sum] : sums)
    means[key] = sum.first / sum.second;
  return means;
}

}  // namespace clustertwin::calibrators::detail

namespace clustertwin::calibrators {

StatusOr<cluster::ClusterProfile> fit_shared_cores(const std::vector<MeasuredRun>& runs,
                                                   cluster::ClusterProfile profile) {
  // Runs of one variant on one worker count share a plan: pool their samples, simulate once.
  struct Group {
    const MeasuredRun* first = nullptr;
    std::map<std::string, std::pair<double, int64_t>> real;  // key -> sum of seconds, samples
  };
  std::map<std::pair<std::string, int64_t>, Group> groups;
  for (const MeasuredRun& m : runs) {
    Group& g = groups[{m.run->metadata.variant, m.run->metadata.world_size}];
    if (g.first == nullptr) g.first = &m;
    for (const TaskSample& t : task_samples(*m.run, m.first_step, m.last_step)) {
      g.real[t.cost_key].first += t.seconds;
      ++g.real[t.cost_key].second;
    }
  }
  constexpr int kRounds = 12;
  for (int round = 0; round < kRounds; ++round) {
    std::map<std::string, std::pair<double, double>> sums;  // key -> real seconds, twin seconds
    for (const auto& [id, g] : groups) {
      const RecordedRun& run = *g.first->run;
      sim::SimOptions o;
      o.workers = static_cast<int>(run.metadata.world_size);
      o.steps = run.runner_steps;
      o.warmup_steps = g.first->first_step;
      o.drain_steps = run.runner_steps - 1 - g.first->last_step;
      auto twin = sim::simulate_plan(run.plan, profile, o);
      if (!twin.is_ok()) return twin.status().with_context(run.path);
      const std::map<std::string, double> twin_means = detail::twin_key_means(run.plan, *twin);
      for (const auto& [key, real] : g.real) {
        auto it = twin_means.find(key);
        if (it == twin_means.end()) continue;
        sums[key].first += real.first;
        sums[key].second += it->second * static_cast<double>(real.second);
      }
    }
    double worst = 0;
    for (const auto& [key, sum] : sums) {
      auto cost = profile.costs.find(key);
      if (cost == profile.costs.end() || sum.first <= 0 || sum.second <= 0) continue;
      const double f = sum.first / sum.second;
      worst = std::max(worst, std::abs(f - 1));
      cluster::CostModel& c = cost->second;
      c.latency *= f;
      c.per_request *= f;
      c.step_latency *= f;
      c.step_wait *= f;  // the key's whole time: its wait too, else a key whose wait alone outlasts it stays long
      if (c.flop_rate > 0) c.flop_rate /= f;
      if (c.byte_rate > 0) c.byte_rate /= f;
      if (c.bus_rate > 0) c.bus_rate /= f;
    }
    if (worst < 0.002) break;
  }
  return profile;
}

}  // namespace clustertwin::calibrators
