#include "sim/mix/resilience.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace clustertwin::sim::mix {

std::vector<double> node_failures(uint64_t seed, int node, double node_mtbf_s, double horizon_s) {
  std::vector<double> out;
  if (!(node_mtbf_s > 0)) return out;
  // One stream per node: the seed and the node mixed (splitmix64's constants), then the standard's
  // fully specified engine; the exponential draw is written out (std::exponential_distribution's
  // algorithm is the library's choice, and the same seed must give the same bytes everywhere).
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(node) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  std::mt19937_64 rng(z ^ (z >> 31));
  double t = 0;
  while (true) {
    // A uniform in (0, 1] from the top 53 bits.
    const double u = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
    t += -std::log(u) * node_mtbf_s;
    if (t >= horizon_s) break;
    out.push_back(t);
  }
  return out;
}

ResilienceResult run_timeline(const CheckpointPolicy& policy, const std::vector<double>& failures, double horizon_s,
                              double step_s) {
  ResilienceResult r;
  r.interval_s = policy.interval_s;
  size_t next = 0;  // the first failure not yet reached
  double t = 0;
  auto next_failure = [&] { return next < failures.size() ? failures[next] : INFINITY; };
  while (t < horizon_s) {
    const double segment_end = t + policy.interval_s + policy.cost_s;
    const double f = next_failure();
    if (f >= segment_end && segment_end <= horizon_s) {
      r.useful_s += policy.interval_s;
      r.checkpoint_s += policy.cost_s;
      t = segment_end;
      continue;
    }
    if (f >= horizon_s) {
      // The horizon comes first: the work since the last checkpoint is still pending.
      r.pending_s = std::min(horizon_s - t, policy.interval_s);
      break;
    }
    // A failure: everything since the last checkpoint is lost, then restart until one completes.
    r.lost_s += f - t;
    ++r.failures;
    ++next;
    t = f;
    while (t < horizon_s) {
      const double restart_end = t + policy.restart_s;
      const double g = next_failure();
      if (g >= restart_end || g >= horizon_s) {
        r.restart_s += std::min(restart_end, horizon_s) - t;
        t = restart_end;
        break;
      }
      r.restart_s += g - t;
      ++r.failures;
      ++next;
      t = g;
    }
  }
  r.useful_fraction = horizon_s > 0 ? r.useful_s / horizon_s : 0;
  r.goodput_steps_per_hour = step_s > 0 && horizon_s > 0 ? r.useful_s / step_s / (horizon_s / 3600) : 0;
  return r;
}

double daly_segment_time(const CheckpointPolicy& policy, double mtbf_s) {
  return mtbf_s * std::exp(policy.restart_s / mtbf_s) * std::expm1((policy.interval_s + policy.cost_s) / mtbf_s);
}

double young_interval(double cost_s, double mtbf_s) {
  return std::sqrt(2 * cost_s * mtbf_s);
}

JobResilience job_resilience(const JobSpec& job, const FailureSpec& failures, const std::vector<int>& nodes,
                             uint64_t seed, double step_s) {
  JobResilience out;
  std::vector<double> times;  // every failure of the job's nodes
  for (int node : nodes) {
    if (failures.node_mtbf_s > 0) {
      const std::vector<double> own = node_failures(seed, node, failures.node_mtbf_s, failures.horizon_s);
      times.insert(times.end(), own.begin(), own.end());
    }
    for (const auto& [time, failed] : failures.listed) {
      if (failed == node && time < failures.horizon_s) times.push_back(time);
    }
  }
  std::sort(times.begin(), times.end());
  std::vector<double> intervals = job.checkpoint_every;
  if (failures.node_mtbf_s > 0) {
    out.mtbf_s = failures.node_mtbf_s / static_cast<double>(nodes.size());
    out.young_interval_s = young_interval(job.checkpoint_cost_s, out.mtbf_s);
    // A checkpoint that costs nothing is best taken continuously: Young's interval is 0, no row to run.
    out.young_row = out.young_interval_s > 0;
    if (out.young_row) intervals.push_back(out.young_interval_s);
  }
  for (double interval : intervals) {
    const CheckpointPolicy policy{interval, job.checkpoint_cost_s, job.restart_s};
    out.rows.push_back(run_timeline(policy, times, failures.horizon_s, step_s));
    out.daly_fraction.push_back(out.mtbf_s > 0 ? interval / daly_segment_time(policy, out.mtbf_s) : 0.0);
  }
  for (size_t i = 1; i < out.rows.size(); ++i) {
    if (out.rows[i].useful_s > out.rows[out.best].useful_s) out.best = i;
  }
  return out;
}

}  // namespace clustertwin::sim::mix
