#include "sim/core/metrics.h"

#include <algorithm>
#include <map>

namespace clustertwin::sim {
namespace {

using Intervals = std::vector<std::pair<double, double>>;

// Merged copy of `intervals` clipped to [lo, hi).
Intervals clipped_union(Intervals intervals, double lo, double hi) {
  for (auto& [s, e] : intervals) {
    s = std::clamp(s, lo, hi);
    e = std::clamp(e, lo, hi);
  }
  std::sort(intervals.begin(), intervals.end());
  Intervals out;
  for (const auto& [s, e] : intervals) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(s, e);
    }
  }
  return out;
}

double length(const Intervals& merged) {
  double total = 0;
  for (const auto& [s, e] : merged)
    total += e - s;
  return total;
}

double overlap(const Intervals& a, const Intervals& b) {
  double total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    total += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

}  // namespace

void compute_metrics(const models::Plan& plan, const std::vector<traces::Event>& events,
                     const std::function<double(const traces::Event&)>& peak_flops, SimResult* r) {
  const int last = r->steps - 1 - r->drain_steps;  // the last measured step
  const int measured = std::max(1, last + 1 - r->warmup_steps);
  const double lo = r->warmup_steps > 0 ? r->step_end_s[r->warmup_steps - 1] : 0.0;
  const double hi = r->step_end_s.empty() ? 0.0 : r->step_end_s[std::max(0, last)];
  r->step_time_s = (hi - lo) / measured;
  const double scale = 1.0 / (measured * std::max(1, r->workers));  // per step, per rank

  std::map<int64_t, Intervals> compute, comm;
  std::map<std::pair<int64_t, int64_t>, Intervals> streams;
  std::vector<double> task_total(plan.tasks.size(), 0.0), task_max(plan.tasks.size(), 0.0);
  std::vector<int64_t> task_count(plan.tasks.size(), 0);
  double flop_seconds = 0;  // sum of flops / peak over measured compute events
  for (const traces::Event& e : events) {
    const double s = e.ts_us * 1e-6, end = e.end_us() * 1e-6;
    if (e.category == traces::Category::kCompute) compute[e.rank].emplace_back(s, end);
    if (e.category == traces::Category::kComm) comm[e.rank].emplace_back(s, end);
    streams[{e.rank, e.stream}].emplace_back(s, end);
    if (e.step && *e.step >= r->warmup_steps && *e.step <= last && e.task_id) {
      const size_t t = static_cast<size_t>(*e.task_id);
      task_total[t] += e.dur_us * 1e-6;
      task_max[t] = std::max(task_max[t], e.dur_us * 1e-6);
      ++task_count[t];
      if (e.category == traces::Category::kCompute && e.flops && *e.flops > 0) {
        const double peak = peak_flops(e);
        if (peak > 0) flop_seconds += *e.flops / peak;
      }
    }
  }
  double compute_total = 0, comm_total = 0, exposed_total = 0;
  for (int64_t rank = 0; rank < r->workers; ++rank) {
    const Intervals c = clipped_union(compute[rank], lo, hi);
    const Intervals m = clipped_union(comm[rank], lo, hi);
    compute_total += length(c);
    comm_total += length(m);
    exposed_total += length(m) - overlap(m, c);
  }
  r->compute_s = compute_total * scale;
  r->comm_s = comm_total * scale;
  r->exposed_comm_s = exposed_total * scale;
  r->mfu = r->step_time_s > 0 ? flop_seconds * scale / r->step_time_s : 0;

  r->streams.clear();
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    double busy = 0;
    for (int64_t rank = 0; rank < r->workers; ++rank) {
      auto it = streams.find({rank, static_cast<int64_t>(s)});
      if (it != streams.end()) busy += length(clipped_union(it->second, lo, hi));
    }
    StreamMetrics sm;
    sm.stream = plan.streams[s];
    sm.busy_s = busy * scale;
    sm.utilization = r->step_time_s > 0 ? sm.busy_s / r->step_time_s : 0;
    r->streams.push_back(sm);
  }
  r->tasks.clear();
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    TaskMetrics tm;
    tm.name = plan.tasks[t].name;
    tm.mean_s = task_count[t] > 0 ? task_total[t] / static_cast<double>(task_count[t]) : 0;
    tm.max_s = task_max[t];
    r->tasks.push_back(tm);
  }
}

}  // namespace clustertwin::sim
