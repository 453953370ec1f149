#include "sim/core/metrics.h"

#include <algorithm>
#include <map>
#include <set>

#include "traces/intervals.h"

namespace clustertwin::sim {
namespace {

using traces::clip_and_merge;
using traces::Intervals;
using traces::intervals_length;
using traces::merge_intervals;
using traces::overlap_length;

}  // namespace

void compute_metrics(const models::Plan& plan, const std::vector<traces::Event>& events,
                     const std::function<double(const traces::Event&)>& peak_flops,
                     const std::vector<BreakdownLayer>& breakdown, SimResult* r) {
  const int last = r->steps - 1 - r->drain_steps;  // the last measured step
  const int measured = std::max(1, last + 1 - r->warmup_steps);
  const double lo = r->warmup_steps > 0 ? r->step_end_s[r->warmup_steps - 1] : 0.0;
  const double hi = r->step_end_s.empty() ? 0.0 : r->step_end_s[std::max(0, last)];
  r->step_time_s = (hi - lo) / measured;
  std::set<int64_t> ranks;
  for (const traces::Event& e : events)
    ranks.insert(e.rank);
  const double scale = 1.0 / (measured * std::max<double>(1, static_cast<double>(ranks.size())));  // per step, rank
  std::map<std::string, size_t> layer_of;  // cost key -> breakdown layer
  for (size_t l = 0; l < breakdown.size(); ++l) {
    for (const std::string& key : breakdown[l].cost_keys)
      layer_of.emplace(key, l);
  }
  std::map<std::pair<int64_t, size_t>, Intervals> layers;  // (rank, layer)

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
    if (auto layer = layer_of.find(e.cost_key); layer != layer_of.end())
      layers[{e.rank, layer->second}].emplace_back(s, end);
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
  r->breakdown.assign(breakdown.size(), LayerMetrics{});
  for (size_t l = 0; l < breakdown.size(); ++l)
    r->breakdown[l].name = breakdown[l].name;
  for (int64_t rank : ranks) {
    Intervals covered;  // what earlier layers cover
    for (size_t l = 0; l < breakdown.size(); ++l) {
      const Intervals mine = clip_and_merge(layers[{rank, l}], lo, hi);
      r->breakdown[l].busy_s += intervals_length(mine) * scale;
      r->breakdown[l].exposed_s += (intervals_length(mine) - overlap_length(mine, covered)) * scale;
      covered.insert(covered.end(), mine.begin(), mine.end());
      merge_intervals(&covered);
    }
  }
  for (int64_t rank : ranks) {
    const Intervals c = clip_and_merge(compute[rank], lo, hi);
    const Intervals m = clip_and_merge(comm[rank], lo, hi);
    compute_total += intervals_length(c);
    comm_total += intervals_length(m);
    exposed_total += intervals_length(m) - overlap_length(m, c);
  }
  r->compute_s = compute_total * scale;
  r->comm_s = comm_total * scale;
  r->exposed_comm_s = exposed_total * scale;
  r->mfu = r->step_time_s > 0 ? flop_seconds * scale / r->step_time_s : 0;

  r->streams.clear();
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    double busy = 0;
    for (int64_t rank : ranks) {
      auto it = streams.find({rank, static_cast<int64_t>(s)});
      if (it != streams.end()) busy += intervals_length(clip_and_merge(it->second, lo, hi));
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
