// The task samples of a recorded run (each task's time from ready to end,
// a send and its recv as one transfer, a collective once per run at the mean
// over its members), the per-key fit of them, and a profile priced by the fits.
#include "calibrators/task_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "common/statistics.h"

namespace clustertwin::calibrators {

namespace {

bool is_point_to_point(const models::Task& t) {
  return t.collective &&
         (t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv);
}

// When each recorded task became ready: its dependencies and the task before it on its stream done, and its
// launch where the trace has it.
class ReadyClock {
 public:
  explicit ReadyClock(const RecordedRun& run)
      : plan_(run.plan),
        stream_prev_(run.plan.tasks.size(), -1),
        stream_last_(run.plan.streams.size(), -1),
        imported_(run.metadata.source == traces::Source::kImported) {
    for (const traces::Event& e : run.events)
      end_[{e.rank, *e.step, *e.task_id}] = e.end_us() * 1e-6;
    for (const models::Task& t : plan_.tasks) {
      stream_prev_[t.id] = stream_last_[t.stream];
      stream_last_[t.stream] = t.id;
    }
  }

  // A profiler trace's launch link (a derived plan's host tasks hold the host's time); the executors' own
  // GPU recordings carry their host side in the same fields, but their plans have no host tasks.
  bool imported() const { return imported_; }

  // A task's time is from when it became ready (its dependencies and the task before it on its stream done,
  // and its launch where the trace has it) to its end: what it adds to the critical path, including the wait for a core
  // and a thread's wake-up.
  double ready(const traces::Event& e) const {
    const models::Task& t = plan_.tasks[*e.task_id];
    double r = -1;
    for (int d : t.deps)
      r = std::max(r, end_of(e.rank, *e.step, d));
    for (int d : t.prev_step_deps)
      r = std::max(r, end_of(e.rank, *e.step - 1, d));
    r = std::max(r, stream_prev_[t.id] >= 0 ? end_of(e.rank, *e.step, stream_prev_[t.id])
                                            : end_of(e.rank, *e.step - 1, stream_last_[t.stream]));
    // A kernel cannot start before the host has launched it (an imported trace's launch link): the wait for
    // the host is the host's time, not the kernel's.
    if (imported_ && e.host_ts_us) r = std::max(r, *e.launch_end_us() * 1e-6);
    return r < 0 ? e.ts_us * 1e-6 : std::min(r, e.ts_us * 1e-6);
  }

 private:
  double end_of(int64_t rank, int64_t step, int64_t task) const {
    auto it = end_.find({rank, step, task});
    return it == end_.end() ? -1.0 : it->second;
  }

  const models::Plan& plan_;
  // End of each (rank, step, task), to know when a task became ready.
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> end_;
  // The task before each one on its stream (plan order), -1 for a stream's first.
  std::vector<int> stream_prev_, stream_last_;
  bool imported_;
};

TaskSample task_sample(const RecordedRun& run, const models::Task& t, double seconds, int64_t group_size,
                       std::optional<double> cpu_s) {
  const bool flops = t.kind == models::TaskKind::kCompute;
  // A collective of one member moves nothing over a network: its time is a local copy (NCCL and Gloo copy
  // the buffer to itself), a plain cost of its bytes, which a group of one prices with latency_steps and
  // bus_factor both 0 (cluster::CostModel::collective_seconds).
  if (t.collective && group_size != 1) {
    const int n = static_cast<int>(std::max<int64_t>(2, group_size));
    return TaskSample{t.cost_key,
                      seconds,
                      static_cast<double>(t.bytes) * cluster::bus_factor(t.collective->op, n),
                      false,
                      cluster::latency_steps(t.collective->op, n),
                      t.collective->op,
                      static_cast<int>(run.metadata.world_size),
                      0,
                      cpu_s};
  }
  std::optional<models::CollectiveOp> op;
  if (t.collective) op = t.collective->op;
  return TaskSample{t.cost_key, seconds, flops ? t.flops : static_cast<double>(t.bytes), flops, 0, op, 0, 0, cpu_s};
}

std::optional<double> cpu_seconds(const traces::Event& e) {
  if (!e.cpu_us) return std::nullopt;
  return *e.cpu_us * 1e-6;
}

// Collectives: one time per (task, step), the mean over members of ready to end. Its members are ready at
// different times (noise on a shared machine); the twin's are not, so the mean wait for the slowest member
// belongs to the collective. Their CPU time likewise, where every member records one.
struct CollectiveRun {
  double seconds = 0, cpu_s = 0;
  double last_ready = -1, end_sum = 0;
  int members = 0, with_cpu = 0;
  int64_t group_size = 0;  // as its events record it
};
using CollectiveRuns = std::map<std::pair<int64_t, int64_t>, CollectiveRun>;  // task, step

void add_collective_member(const RecordedRun& run, const traces::Event& e, double since_ready, CollectiveRuns* runs) {
  CollectiveRun& c = (*runs)[{*e.task_id, *e.step}];
  c.seconds += since_ready;
  c.last_ready = std::max(c.last_ready, e.end_us() * 1e-6 - since_ready);
  c.end_sum += e.end_us() * 1e-6;
  ++c.members;
  if (e.cpu_us) {
    c.cpu_s += *e.cpu_us * 1e-6;
    ++c.with_cpu;
  }
  // A run of one rank has groups of one, whether or not its events say so.
  c.group_size = e.group_size.value_or(e.peer ? 2 : run.metadata.world_size == 1 ? 1 : 0);
}

void add_collective_samples(const RecordedRun& run, const CollectiveRuns& runs, std::vector<TaskSample>* out) {
  for (const auto& [key, c] : runs) {
    const std::optional<double> cpu =
        c.with_cpu == c.members ? std::optional<double>(c.cpu_s / c.members) : std::nullopt;
    out->push_back(task_sample(run, run.plan.tasks[key.first], c.seconds / c.members, c.group_size, cpu));
    out->back().met_s = std::max(0.0, c.end_sum / c.members - c.last_ready);
  }
}

struct PairSide {
  int64_t task;
  bool send;
  double ready, end;
};
using PairSides = std::map<std::tuple<int64_t, int64_t, int64_t, int>, std::vector<PairSide>>;  // step, from, to, tag

// A send and its recv: one transfer, which starts when the later of the two is ready (a recv posted
// early waits for its send, and the twin's rendezvous does that waiting); the mean of their ends.
void add_transfer_samples(const RecordedRun& run, const PairSides& pairs, std::vector<TaskSample>* out) {
  for (const auto& [key, sides] : pairs) {
    if (sides.size() != 2) {
      for (const PairSide& s : sides)
        out->push_back(task_sample(run, run.plan.tasks[s.task], s.end - s.ready, 2, std::nullopt));
      continue;
    }
    const double start = std::max(sides[0].ready, sides[1].ready);
    const double end = (sides[0].end + sides[1].end) / 2;
    out->push_back(task_sample(run, run.plan.tasks[sides[sides[0].send ? 0 : 1].task], std::max(0.0, end - start), 2,
                               std::nullopt));
  }
}

}  // namespace

std::vector<TaskSample> task_samples(const RecordedRun& run, int first_step, int last_step) {
  const models::Plan& plan = run.plan;
  const ReadyClock clock(run);
  CollectiveRuns collective_runs;
  PairSides pairs;
  std::vector<TaskSample> out;
  const std::set<int> stalled = stalled_steps(run, first_step, last_step);  // not the workload's time
  for (const traces::Event& e : run.events) {
    if (*e.step < first_step || *e.step > last_step || e.cost_key.empty()) continue;
    if (stalled.count(static_cast<int>(*e.step)) > 0) continue;
    // A kernel that a profiler trace links to its launch costs its time on the device: a wait for the host
    // is a host task of the derived plan, a wait for another stream a dependency, and a wait neither
    // explains would inflate every task of its cost key, not only the one that waited. Without the link
    // (older traces) a wait may be the host's, and stays the kernel's.
    const bool device_time = clock.imported() && e.host_ts_us && !plan.tasks[*e.task_id].collective;
    const double since_ready = device_time ? e.dur_us * 1e-6 : e.end_us() * 1e-6 - clock.ready(e);
    const models::Task& task = plan.tasks[*e.task_id];
    if (is_point_to_point(task) && e.peer) {
      const bool send = task.collective->op == models::CollectiveOp::kSend;
      PairSide side{*e.task_id, send, clock.ready(e), e.end_us() * 1e-6};
      pairs[{*e.step, send ? e.rank : *e.peer, send ? *e.peer : e.rank, task.collective->tag}].push_back(side);
    } else if (task.collective) {
      add_collective_member(run, e, since_ready, &collective_runs);
    } else {
      out.push_back(task_sample(run, plan.tasks[*e.task_id], since_ready, 0, cpu_seconds(e)));
    }
  }
  add_collective_samples(run, collective_runs, &out);
  add_transfer_samples(run, pairs, &out);
  return out;
}

std::vector<KeyFit> fit_keys(const std::vector<TaskSample>& samples) {
  std::map<std::string, std::vector<const TaskSample*>> by_key;
  for (const TaskSample& s : samples)
    by_key[s.cost_key].push_back(&s);
  std::vector<KeyFit> fits;
  for (const auto& [key, v] : by_key) {
    std::vector<double> t;
    double size = 0, time = 0;
    for (const TaskSample* s : v) {
      t.push_back(s->seconds);
      size += s->size;
      time += s->seconds;
    }
    const double n = static_cast<double>(v.size());
    KeyFit f{key, static_cast<int64_t>(v.size()), time / n, quantile(t, 0.5), quantile(t, 0.75) - quantile(t, 0.25)};
    f.mean_size = size / n;
    f.size_is_flops = v.front()->size_is_flops;
    f.collective = v.front()->steps > 0;
    // A robust slope of time on size when the sizes differ (several variants or scales pooled), through the
    // mean: a step's time is the sum of its tasks' means, so the level is the mean's, while a few wild
    // samples (a descheduled process) do not tilt the slope. Else all of the time per unit of size.
    // A collective's time is steps x latency + bus bytes x seconds per unit: per latency step, that is a line.
    std::vector<double> x, y;
    double steps = 0;
    for (const TaskSample* s : v) {
      const double per = f.collective ? s->steps : 1.0;
      x.push_back(s->size / per);
      y.push_back(s->seconds / per);
      steps += per;
    }
    const double mean_steps = steps / n;
    const double slope = robust_line(x, y).slope;
    // Through the mean: mean_s = mean_steps x latency + mean_size x slope.
    if (slope > 0 && f.mean_s - slope * f.mean_size >= 0) {
      f.seconds_per_unit = slope;
      f.latency_s = (f.mean_s - slope * f.mean_size) / mean_steps;
    } else if (f.mean_size > 0) {
      f.seconds_per_unit = f.mean_s / f.mean_size;
    } else {
      f.latency_s = f.mean_s / mean_steps;
    }
    std::map<double, std::pair<double, int>> by_size;  // size -> sum of times, samples
    std::map<double, double> steps_of;
    for (const TaskSample* s : v) {
      by_size[s->size].first += s->seconds;
      ++by_size[s->size].second;
      steps_of[s->size] = f.collective ? s->steps : 1.0;
    }
    for (const auto& [size, sum] : by_size) {
      const double mean = sum.first / sum.second;
      if (mean > 0) {
        const double line = steps_of[size] * f.latency_s + f.seconds_per_unit * size;
        f.max_abs_residual = std::max(f.max_abs_residual, std::abs(line / mean - 1));
      }
    }
    fits.push_back(f);
  }
  return fits;
}

std::vector<KeyFit> fit_key_durations(const RecordedRun& run, int first_step, int last_step) {
  return fit_keys(task_samples(run, first_step, last_step));
}

cluster::ClusterProfile profile_with_fits(const cluster::ClusterProfile& base, const std::vector<KeyFit>& fits) {
  cluster::ClusterProfile p = base;
  for (const KeyFit& f : fits) {
    cluster::CostModel& c = p.costs[f.cost_key];
    const double step_wait = c.step_wait;  // measured apart from the fit (step_wait.h)
    c = cluster::CostModel{};
    c.step_wait = step_wait;
    if (f.collective) {
      c.step_latency = f.latency_s;
      if (f.seconds_per_unit > 0) c.bus_rate = 1 / f.seconds_per_unit;
      continue;
    }
    c.latency = f.latency_s;
    if (f.seconds_per_unit > 0) (f.size_is_flops ? c.flop_rate : c.byte_rate) = 1 / f.seconds_per_unit;
  }
  return p;
}

}  // namespace clustertwin::calibrators
