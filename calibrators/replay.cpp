#include "calibrators/replay.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>

#include "calibrators/stats.h"
#include "calibrators/step_wait.h"
#include "models/plan/plan_json.h"
#include "sim/core/simulator.h"
#include "traces/trace_reader.h"

namespace clustertwin::calibrators {

namespace {

// Per cost key, the mean duration of its tasks in a twin run (each task's mean over ranks and measured
// steps; a key's tasks run equally often).
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

}  // namespace

StatusOr<RecordedRun> read_recorded_run(const std::string& path) {
  auto trace = traces::read_trace(path);
  if (!trace.is_ok()) return trace.status();
  RecordedRun run;
  run.path = path;
  run.metadata = trace->metadata;
  run.events = std::move(trace->events);
  auto bad = [&](const std::string& field, const std::string& why) {
    return Status::invalid_argument(path + ": field 'metadata.config." + field + "': " + why);
  };
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(run.metadata.config_json);
  } catch (const nlohmann::json::exception&) {
    return Status::invalid_argument(path + ": field 'metadata.config': not a JSON object");
  }
  if (!config.is_object() || !config.contains("plan") || !config["plan"].is_object()) {
    return bad("plan", "missing: replay needs a trace recorded with the plan (clustertwin run nestpipe --trace)");
  }
  auto plan = models::plan_from_json(config["plan"].dump(), path + " (metadata.config.plan)");
  if (!plan.is_ok()) return plan.status();
  run.plan = std::move(*plan);
  for (const char* field : {"runner_steps", "prologue_steps"}) {
    if (!config.contains(field) || !config[field].is_number_integer() || config[field].get<int64_t>() < 0 ||
        config[field].get<int64_t>() > 1'000'000) {
      return bad(field, "missing or not a step count");
    }
  }
  run.runner_steps = config["runner_steps"].get<int>();
  run.prologue_steps = config["prologue_steps"].get<int>();
  if (config.contains("step_spans_us")) {
    const nlohmann::json& ranks = config["step_spans_us"];
    auto is_span = [](const nlohmann::json& s) {
      return s.is_array() && s.size() == 2 && s[0].is_number() && s[1].is_number() &&
             s[1].get<double>() >= s[0].get<double>();
    };
    auto is_rank = [&](const nlohmann::json& r) {
      return r.is_object() && r.contains("spans") && r["spans"].is_array() &&
             r["spans"].size() == static_cast<size_t>(run.runner_steps) &&
             std::all_of(r["spans"].begin(), r["spans"].end(), is_span);
    };
    if (!ranks.is_array() || ranks.empty() || !std::all_of(ranks.begin(), ranks.end(), is_rank))
      return bad("step_spans_us", "not a list of ranks' {spans: one [start, end] (end >= start) per runner step}");
    for (const nlohmann::json& r : ranks) {
      run.step_spans.emplace_back();
      for (const nlohmann::json& s : r["spans"])
        run.step_spans.back().emplace_back(s[0].get<double>() * 1e-6, s[1].get<double>() * 1e-6);
    }
  }
  if (run.metadata.world_size < 1) {
    return Status::invalid_argument(path + ": field 'metadata.world_size': " + std::to_string(run.metadata.world_size) +
                                    " must be >= 1");
  }
  for (size_t i = 0; i < run.events.size(); ++i) {
    const traces::Event& e = run.events[i];
    if (!e.task_id || *e.task_id < 0 || *e.task_id >= static_cast<int64_t>(run.plan.tasks.size()) || !e.step) {
      return Status::invalid_argument(path + ": event " + std::to_string(i) +
                                      ": no task of the recorded plan (field 'task_id' or 'step' missing or out of "
                                      "range)");
    }
  }
  return run;
}

namespace {
bool is_point_to_point(const models::Task& t) {
  return t.collective &&
         (t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv);
}
}  // namespace

std::vector<TaskSample> task_samples(const RecordedRun& run, int first_step, int last_step) {
  const models::Plan& plan = run.plan;
  // End of each (rank, step, task), to know when a task became ready.
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> end;
  for (const traces::Event& e : run.events)
    end[{e.rank, *e.step, *e.task_id}] = e.end_us() * 1e-6;
  auto end_of = [&](int64_t rank, int64_t step, int64_t task) {
    auto it = end.find({rank, step, task});
    return it == end.end() ? -1.0 : it->second;
  };
  // The task before each one on its stream (plan order), -1 for a stream's first.
  std::vector<int> stream_prev(plan.tasks.size(), -1), stream_last(plan.streams.size(), -1);
  for (const models::Task& t : plan.tasks) {
    stream_prev[t.id] = stream_last[t.stream];
    stream_last[t.stream] = t.id;
  }
  // A profiler trace's launch link (a derived plan's host tasks hold the host's time); the executors' own
  // GPU recordings carry their host side in the same fields, but their plans have no host tasks.
  const bool imported = run.metadata.source == traces::Source::kImported;
  // A task's time is from when it became ready (its dependencies and the task before it on its stream done,
  // and its launch where the trace has it) to its end: what it adds to the critical path, including the wait for a core
  // and a thread's wake-up.
  auto ready = [&](const traces::Event& e) {
    const models::Task& t = plan.tasks[*e.task_id];
    double r = -1;
    for (int d : t.deps)
      r = std::max(r, end_of(e.rank, *e.step, d));
    for (int d : t.prev_step_deps)
      r = std::max(r, end_of(e.rank, *e.step - 1, d));
    r = std::max(r, stream_prev[t.id] >= 0 ? end_of(e.rank, *e.step, stream_prev[t.id])
                                           : end_of(e.rank, *e.step - 1, stream_last[t.stream]));
    // A kernel cannot start before the host has launched it (an imported trace's launch link): the wait for
    // the host is the host's time, not the kernel's.
    if (imported && e.host_ts_us) r = std::max(r, *e.launch_end_us() * 1e-6);
    return r < 0 ? e.ts_us * 1e-6 : std::min(r, e.ts_us * 1e-6);
  };
  auto sample = [&](const models::Task& t, double seconds, int64_t group_size) {
    const bool flops = t.kind == models::TaskKind::kCompute;
    if (t.collective) {
      const int n = static_cast<int>(std::max<int64_t>(2, group_size));
      return TaskSample{t.cost_key,
                        seconds,
                        static_cast<double>(t.bytes) * cluster::bus_factor(t.collective->op, n),
                        false,
                        cluster::latency_steps(t.collective->op, n),
                        t.collective->op,
                        static_cast<int>(run.metadata.world_size)};
    }
    return TaskSample{t.cost_key, seconds, flops ? t.flops : static_cast<double>(t.bytes), flops, 0, {}, 0};
  };
  // Collectives: one time per (task, step), the mean over members of ready to end. Its members are ready at
  // different times (noise on a shared machine); the twin's are not, so the mean wait for the slowest member
  // belongs to the collective.
  std::map<std::pair<int64_t, int64_t>, std::pair<double, int>> collective_runs;  // sum of times, members
  std::map<std::pair<int64_t, int64_t>, int64_t> group_size;                      // as its events record it
  struct PairSide {
    int64_t task;
    bool send;
    double ready, end;
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, std::vector<PairSide>> pairs;  // step, from, to, tag
  std::vector<TaskSample> out;
  for (const traces::Event& e : run.events) {
    if (*e.step < first_step || *e.step > last_step || e.cost_key.empty()) continue;
    // A kernel that a profiler trace links to its launch costs its time on the device: a wait for the host
    // is a host task of the derived plan, a wait for another stream a dependency, and a wait neither
    // explains would inflate every task of its cost key, not only the one that waited. Without the link
    // (older traces) a wait may be the host's, and stays the kernel's.
    const bool device_time = imported && e.host_ts_us && !plan.tasks[*e.task_id].collective;
    const double since_ready = device_time ? e.dur_us * 1e-6 : e.end_us() * 1e-6 - ready(e);
    const models::Task& task = plan.tasks[*e.task_id];
    if (is_point_to_point(task) && e.peer) {
      const bool send = task.collective->op == models::CollectiveOp::kSend;
      PairSide side{*e.task_id, send, ready(e), e.end_us() * 1e-6};
      pairs[{*e.step, send ? e.rank : *e.peer, send ? *e.peer : e.rank, task.collective->tag}].push_back(side);
    } else if (task.collective) {
      auto& [sum, members] = collective_runs[{*e.task_id, *e.step}];
      sum += since_ready;
      ++members;
      group_size[{*e.task_id, *e.step}] = e.group_size.value_or(e.peer ? 2 : 0);
    } else {
      out.push_back(sample(plan.tasks[*e.task_id], since_ready, 0));
    }
  }
  for (const auto& [key, run_time] : collective_runs)
    out.push_back(sample(plan.tasks[key.first], run_time.first / run_time.second, group_size[key]));
  // A send and its recv: one transfer, which starts when the later of the two is ready (a recv posted
  // early waits for its send, and the twin's rendezvous does that waiting); the mean of their ends.
  for (const auto& [key, sides] : pairs) {
    if (sides.size() != 2) {
      for (const PairSide& s : sides)
        out.push_back(sample(plan.tasks[s.task], s.end - s.ready, 2));
      continue;
    }
    const double start = std::max(sides[0].ready, sides[1].ready);
    const double end = (sides[0].end + sides[1].end) / 2;
    out.push_back(sample(plan.tasks[sides[sides[0].send ? 0 : 1].task], std::max(0.0, end - start), 2));
  }
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
    c = cluster::CostModel{};
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
      const std::map<std::string, double> twin_means = twin_key_means(run.plan, *twin);
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
      if (c.flop_rate > 0) c.flop_rate /= f;
      if (c.byte_rate > 0) c.byte_rate /= f;
      if (c.bus_rate > 0) c.bus_rate /= f;
    }
    if (worst < 0.002) break;
  }
  return profile;
}

StatusOr<double> recorded_step_time(const RecordedRun& run, int first_step, int last_step) {
  if (!run.step_spans.empty() && first_step >= 0 && last_step >= first_step && last_step < run.runner_steps) {
    double slowest = 0;
    for (const auto& spans : run.step_spans) {
      slowest = std::max(slowest,
                         spans[static_cast<size_t>(last_step)].second - spans[static_cast<size_t>(first_step)].first);
    }
    return slowest / (last_step - first_step + 1);
  }
  if (first_step < 1 || last_step < first_step || last_step >= run.runner_steps) {
    return Status::invalid_argument(run.path + ": measured steps [" + std::to_string(first_step) + ", " +
                                    std::to_string(last_step) + "] do not fit the run's " +
                                    std::to_string(run.runner_steps) + " runner steps with one before them");
  }
  std::vector<double> end(run.runner_steps, 0.0);
  for (const traces::Event& e : run.events) {
    if (*e.step >= 0 && *e.step < run.runner_steps) end[*e.step] = std::max(end[*e.step], e.end_us() * 1e-6);
  }
  return (end[last_step] - end[first_step - 1]) / (last_step - first_step + 1);
}

StatusOr<ReplayResult> replay(const std::string& trace_path, const std::vector<std::string>& costs_paths,
                              const cluster::ClusterProfile& base, int warmup, int drain) {
  auto run = read_recorded_run(trace_path);
  if (!run.is_ok()) return run.status();
  ReplayResult r;
  r.system = run->metadata.system;
  r.variant = run->metadata.variant;
  r.workers = static_cast<int>(run->metadata.world_size);
  r.first_step = run->prologue_steps + warmup;
  r.last_step = run->runner_steps - 1 - drain;
  // A run whose steps have spans (a profiler trace's) is measured from its first step's start: no warm-up needed.
  const int least_warmup = run->step_spans.empty() ? 1 : 0;
  if (warmup < least_warmup || drain < 0 || r.last_step < r.first_step) {
    return Status::invalid_argument("--warmup " + std::to_string(warmup) + " --drain " + std::to_string(drain) +
                                    ": leave no step of the " + std::to_string(run->runner_steps) +
                                    " recorded to measure (warm-up at least " + std::to_string(least_warmup) + ")");
  }
  auto real = recorded_step_time(*run, r.first_step, r.last_step);
  if (!real.is_ok()) return real.status();
  r.real_step_s = *real;
  const std::vector<KeyFit> own = fit_key_durations(*run, r.first_step, r.last_step);
  bool profile_prices_all = true;
  for (const models::Task& t : run->plan.tasks) {
    if (t.cost_key.empty() || base.costs.count(t.cost_key) > 0) continue;
    // A collective the profile's benchmarked network prices (calibrate --collectives-from-network) needs no key.
    const bool fitted_network = t.collective && base.fitted_collective(t.collective->op) != nullptr;
    if (!fitted_network) profile_prices_all = false;
  }
  cluster::ClusterProfile profile = base;
  std::vector<RecordedRun> sources;  // the runs the costs come from
  std::vector<MeasuredRun> measured;
  if (!costs_paths.empty()) {
    std::vector<TaskSample> samples;
    sources.reserve(costs_paths.size());
    for (const std::string& path : costs_paths) {
      auto source = read_recorded_run(path);
      if (!source.is_ok()) return source.status();
      if (source->metadata.system != run->metadata.system) {
        return Status::invalid_argument(path + ": field 'metadata.system': '" + source->metadata.system +
                                        "' is not the system of " + trace_path + " ('" + run->metadata.system + "')");
      }
      const int first = source->prologue_steps + warmup, last = source->runner_steps - 1 - drain;
      if (last < first) return Status::invalid_argument(path + ": too few runner steps to fit costs from");
      const auto more = task_samples(*source, first, last);
      samples.insert(samples.end(), more.begin(), more.end());
      sources.push_back(std::move(*source));
      measured.push_back({&sources.back(), first, last});
    }
    remove_step_waits(base, &samples);
    r.fits = fit_keys(samples);
    r.costs = "runs";
    r.costs_from = costs_paths;
    profile = profile_with_fits(base, r.fits);
  } else if (profile_prices_all) {
    r.costs = "profile";
  } else {
    std::vector<TaskSample> samples = task_samples(*run, r.first_step, r.last_step);
    remove_step_waits(base, &samples);
    r.fits = fit_keys(samples);
    r.costs = "replay";
    profile = profile_with_fits(base, r.fits);
    measured.push_back({&*run, r.first_step, r.last_step});
  }
  if (profile.node_cores > 0 && !measured.empty()) {
    auto shared = fit_shared_cores(measured, profile);
    if (!shared.is_ok()) return shared.status();
    profile = std::move(*shared);
  }
  sim::SimOptions o;
  o.workers = r.workers;
  o.steps = run->runner_steps;
  o.warmup_steps = r.first_step;
  o.drain_steps = drain;
  auto twin = sim::simulate_plan(run->plan, profile, o);
  if (!twin.is_ok()) return twin.status();
  r.twin_step_s = twin->step_time_s;
  r.step_error = r.real_step_s > 0 ? (r.twin_step_s - r.real_step_s) / r.real_step_s : 0;
  // Per cost key: the real mean against the twin's mean task duration.
  const std::map<std::string, double> twin_means = twin_key_means(run->plan, *twin);
  std::map<std::string, std::pair<double, double>> cpu;  // key -> thread CPU us, start-to-end us
  for (const traces::Event& e : run->events) {
    if (!e.cpu_us || !e.step || *e.step < r.first_step || *e.step > r.last_step || e.cost_key.empty()) continue;
    cpu[e.cost_key].first += *e.cpu_us;
    cpu[e.cost_key].second += e.dur_us;
  }
  for (const KeyFit& f : own) {
    KeyError e;
    e.cost_key = f.cost_key;
    e.samples = f.samples;
    e.real_s = f.mean_s;
    auto it = twin_means.find(f.cost_key);
    if (it != twin_means.end()) e.twin_s = it->second;
    e.error = e.real_s > 0 ? (e.twin_s - e.real_s) / e.real_s : 0;
    auto c = cpu.find(f.cost_key);
    if (c != cpu.end() && c->second.second > 0) e.real_cpu_share = c->second.first / c->second.second;
    r.per_key.push_back(e);
  }
  return r;
}

std::string replay_json(const ReplayResult& r) {
  nlohmann::ordered_json j;
  j["system"] = r.system;
  j["variant"] = r.variant;
  j["workers"] = r.workers;
  j["measured_steps"] = r.last_step - r.first_step + 1;
  j["costs_from"] = r.costs_from;
  j["real_step_ms"] = r.real_step_s * 1e3;
  j["twin_step_ms"] = r.twin_step_s * 1e3;
  j["step_error"] = r.step_error;
  j["costs"] = r.costs;
  j["runs"] = r.costs == "runs" ? static_cast<int>(r.costs_from.size()) : (r.costs == "replay" ? 1 : 0);
  j["per_key"] = nlohmann::ordered_json::array();
  for (const KeyError& e : r.per_key) {
    j["per_key"].push_back({{"cost_key", e.cost_key},
                            {"samples", e.samples},
                            {"real_ms", e.real_s * 1e3},
                            {"twin_ms", e.twin_s * 1e3},
                            {"error", e.error}});
    if (e.real_cpu_share >= 0) j["per_key"].back()["real_cpu_share"] = e.real_cpu_share;
  }
  j["fits"] = nlohmann::ordered_json::array();
  for (const KeyFit& f : r.fits) {
    j["fits"].push_back({{"cost_key", f.cost_key},
                         {"samples", f.samples},
                         {"mean_ms", f.mean_s * 1e3},
                         {"mean_size", f.mean_size},
                         {"size_unit", f.size_is_flops ? "flops" : "bytes"},
                         {"latency_ms", f.latency_s * 1e3},
                         {"ms_per_unit", f.seconds_per_unit * 1e3},
                         {"median_ms", f.median_s * 1e3},
                         {"iqr_ms", f.spread_s * 1e3}});
  }
  return j.dump(2) + "\n";
}

}  // namespace clustertwin::calibrators
