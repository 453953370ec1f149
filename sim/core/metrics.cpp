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

// The measured steps' busy intervals per rank (compute, communication, each
// stream, each breakdown layer) and task times, from one pass over the events.
struct EventTally {
  std::set<int64_t> ranks;
  std::map<int64_t, Intervals> compute, comm;
  std::map<std::pair<int64_t, int64_t>, Intervals> streams;
  std::map<std::pair<int64_t, size_t>, Intervals> layers;  // (rank, layer)
  std::vector<double> task_total, task_max;
  std::vector<int64_t> task_count;
  double flop_seconds = 0;  // sum of flops / peak over measured compute events
};

EventTally tally_events(const models::Plan& plan, const std::vector<traces::Event>& events,
                        const std::function<double(const traces::Event&)>& peak_flops,
                        const std::vector<BreakdownLayer>& breakdown, int warmup_steps, int last) {
  EventTally t;
  for (const traces::Event& e : events)
    t.ranks.insert(e.rank);
  std::map<std::string, size_t> layer_of;  // cost key -> breakdown layer
  for (size_t l = 0; l < breakdown.size(); ++l) {
    for (const std::string& key : breakdown[l].cost_keys)
      layer_of.emplace(key, l);
  }
  t.task_total.assign(plan.tasks.size(), 0.0);
  t.task_max.assign(plan.tasks.size(), 0.0);
  t.task_count.assign(plan.tasks.size(), 0);
  for (const traces::Event& e : events) {
    const double s = e.ts_us * 1e-6, end = e.end_us() * 1e-6;
    if (e.category == traces::Category::kCompute) t.compute[e.rank].emplace_back(s, end);
    if (e.category == traces::Category::kComm) t.comm[e.rank].emplace_back(s, end);
    t.streams[{e.rank, e.stream}].emplace_back(s, end);
    if (auto layer = layer_of.find(e.cost_key); layer != layer_of.end())
      t.layers[{e.rank, layer->second}].emplace_back(s, end);
    if (e.step && *e.step >= warmup_steps && *e.step <= last && e.task_id) {
      const size_t k = static_cast<size_t>(*e.task_id);
      t.task_total[k] += e.dur_us * 1e-6;
      t.task_max[k] = std::max(t.task_max[k], e.dur_us * 1e-6);
      ++t.task_count[k];
      if (e.category == traces::Category::kCompute && e.flops && *e.flops > 0) {
        const double peak = peak_flops(e);
        if (peak > 0) t.flop_seconds += *e.flops / peak;
      }
    }
  }
  return t;
}

// Each layer's busy time and the part of it no earlier layer covers, in [lo, hi].
void add_breakdown(const std::vector<BreakdownLayer>& breakdown, EventTally& t, double lo, double hi, double scale,
                   SimResult* r) {
  r->breakdown.assign(breakdown.size(), LayerMetrics{});
  for (size_t l = 0; l < breakdown.size(); ++l)
    r->breakdown[l].name = breakdown[l].name;
  for (int64_t rank : t.ranks) {
    Intervals covered;  // what earlier layers cover
    for (size_t l = 0; l < breakdown.size(); ++l) {
      const Intervals mine = clip_and_merge(t.layers[{rank, l}], lo, hi);
      r->breakdown[l].busy_s += intervals_length(mine) * scale;
      r->breakdown[l].exposed_s += (intervals_length(mine) - overlap_length(mine, covered)) * scale;
      covered.insert(covered.end(), mine.begin(), mine.end());
      merge_intervals(&covered);
    }
  }
}

// Compute, communication and the communication no compute hides, in [lo, hi].
void add_compute_and_comm(EventTally& t, double lo, double hi, double scale, SimResult* r) {
  double compute_total = 0, comm_total = 0, exposed_total = 0;
  for (int64_t rank : t.ranks) {
    const Intervals c = clip_and_merge(t.compute[rank], lo, hi);
    const Intervals m = clip_and_merge(t.comm[rank], lo, hi);
    compute_total += intervals_length(c);
    comm_total += intervals_length(m);
    exposed_total += intervals_length(m) - overlap_length(m, c);
  }
  r->compute_s = compute_total * scale;
  r->comm_s = comm_total * scale;
  r->exposed_comm_s = exposed_total * scale;
}

void add_streams(const models::Plan& plan, const EventTally& t, double lo, double hi, double scale, SimResult* r) {
  r->streams.clear();
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    double busy = 0;
    for (int64_t rank : t.ranks) {
      auto it = t.streams.find({rank, static_cast<int64_t>(s)});
      if (it != t.streams.end()) busy += intervals_length(clip_and_merge(it->second, lo, hi));
    }
    StreamMetrics sm;
    sm.stream = plan.streams[s];
    sm.busy_s = busy * scale;
    sm.utilization = r->step_time_s > 0 ? sm.busy_s / r->step_time_s : 0;
    r->streams.push_back(sm);
  }
}

void add_tasks(const models::Plan& plan, const EventTally& t, SimResult* r) {
  r->tasks.clear();
  for (size_t k = 0; k < plan.tasks.size(); ++k) {
    TaskMetrics tm;
    tm.name = plan.tasks[k].name;
    tm.mean_s = t.task_count[k] > 0 ? t.task_total[k] / static_cast<double>(t.task_count[k]) : 0;
    tm.max_s = t.task_max[k];
    r->tasks.push_back(tm);
  }
}

}  // namespace

void compute_metrics(const models::Plan& plan, const std::vector<traces::Event>& events,
                     const std::function<double(const traces::Event&)>& peak_flops,
                     const std::vector<BreakdownLayer>& breakdown, SimResult* r) {
  const int last = r->steps - 1 - r->drain_steps;  // the last measured step
  const int measured = std::max(1, last + 1 - r->warmup_steps);
  const double lo = r->warmup_steps > 0 ? r->step_end_s[r->warmup_steps - 1] : 0.0;
  const double hi = r->step_end_s.empty() ? 0.0 : r->step_end_s[std::max(0, last)];
  r->step_time_s = (hi - lo) / measured;
  EventTally t = tally_events(plan, events, peak_flops, breakdown, r->warmup_steps, last);
  const double scale = 1.0 / (measured * std::max<double>(1, static_cast<double>(t.ranks.size())));  // per step, rank
  add_breakdown(breakdown, t, lo, hi, scale, r);
  add_compute_and_comm(t, lo, hi, scale, r);
  r->mfu = r->step_time_s > 0 ? t.flop_seconds * scale / r->step_time_s : 0;
  add_streams(plan, t, lo, hi, scale, r);
  add_tasks(plan, t, r);
}

}  // namespace clustertwin::sim
