// The replay of a recorded run: its costs (fitted on the run, on other runs,
// or the profile's), the twin run on the recorded worker count, and the
// comparison of step times and per-key times; and its JSON report.
#include "calibrators/replay.h"

#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "calibrators/replay_internal.h"
#include "calibrators/step_wait.h"
#include "sim/core/simulator.h"

namespace clustertwin::calibrators {

namespace {

// Whether `base` prices every task of `plan` by its cost key.
bool profile_prices_all(const models::Plan& plan, const cluster::ClusterProfile& base) {
  bool all = true;
  for (const models::Task& t : plan.tasks) {
    if (t.cost_key.empty() || base.costs.count(t.cost_key) > 0) continue;
    // A collective the profile's benchmarked network prices (calibrate --collectives-from-network) needs no key.
    const bool fitted_network = t.collective && base.fitted_collective(t.collective->op) != nullptr;
    if (!fitted_network) all = false;
  }
  return all;
}

// `base` priced by the costs fitted on the runs `costs_paths` (of `run`'s system, read from `trace_path`),
// their keys' fits in `fits`; `sources` holds the runs that `measured` points into.
StatusOr<cluster::ClusterProfile> profile_from_runs(const std::vector<std::string>& costs_paths, const RecordedRun& run,
                                                    const std::string& trace_path, const cluster::ClusterProfile& base,
                                                    int warmup, int drain, std::vector<KeyFit>* fits,
                                                    std::vector<RecordedRun>* sources,
                                                    std::vector<MeasuredRun>* measured) {
  std::vector<TaskSample> samples;
  sources->reserve(costs_paths.size());
  for (const std::string& path : costs_paths) {
    auto source = read_recorded_run(path);
    if (!source.is_ok()) return source.status();
    if (source->metadata.system != run.metadata.system) {
      return Status::invalid_argument(path + ": field 'metadata.system': '" + source->metadata.system +
                                      "' is not the system of " + trace_path + " ('" + run.metadata.system + "')");
    }
    const int first = source->prologue_steps + warmup, last = source->runner_steps - 1 - drain;
    if (last < first) return Status::invalid_argument(path + ": too few runner steps to fit costs from");
    const auto more = task_samples(*source, first, last);
    samples.insert(samples.end(), more.begin(), more.end());
    sources->push_back(std::move(*source));
    measured->push_back({&sources->back(), first, last});
  }
  // Predicting from other runs (another rank count, most often): their collectives' waits, measured in them,
  // held apart from the CPU work the twin time-shares (step_wait.h), as calibrate does by default.
  cluster::ClusterProfile machine = base;
  add_run_step_waits_by_default(samples, &machine);
  remove_step_waits(machine, &samples);
  *fits = fit_keys(samples);
  return profile_with_fits(machine, *fits);
}

// Per cost key: the real mean (`own`) against the twin's mean task duration.
void add_key_errors(const RecordedRun& run, const std::vector<KeyFit>& own,
                    const std::map<std::string, double>& twin_means, ReplayResult* r) {
  std::map<std::string, std::pair<double, double>> cpu;  // key -> thread CPU us, start-to-end us
  for (const traces::Event& e : run.events) {
    if (!e.cpu_us || !e.step || *e.step < r->first_step || *e.step > r->last_step || e.cost_key.empty()) continue;
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
    r->per_key.push_back(e);
  }
}

// The steps left between `warmup` and `drain`: at least one, named by the field that leaves none.
Status check_window(const RecordedRun& run, int warmup, int drain) {
  // A run whose steps have spans (a profiler trace's) is measured from its first step's start: no warm-up needed.
  const int least_warmup = run.step_spans.empty() ? 1 : 0;
  if (warmup < least_warmup) {
    return Status::invalid_argument("warmup " + std::to_string(warmup) + ": must be at least " +
                                    std::to_string(least_warmup));
  }
  if (drain < 0 || run.runner_steps - 1 - drain < run.prologue_steps + warmup) {
    return Status::invalid_argument("drain " + std::to_string(drain) + ": with warmup " + std::to_string(warmup) +
                                    ", leaves no step of the " + std::to_string(run.runner_steps) +
                                    " recorded to measure");
  }
  return Status::ok();
}

}  // namespace

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
  CT_RETURN_IF_ERROR(check_window(*run, warmup, drain));
  auto real = recorded_step_time(*run, r.first_step, r.last_step);
  if (!real.is_ok()) return real.status();
  r.real_step_s = *real;
  const std::vector<KeyFit> own = fit_key_durations(*run, r.first_step, r.last_step);
  cluster::ClusterProfile profile = base;
  std::vector<RecordedRun> sources;  // the runs the costs come from
  std::vector<MeasuredRun> measured;
  if (!costs_paths.empty()) {
    auto fitted = profile_from_runs(costs_paths, *run, trace_path, base, warmup, drain, &r.fits, &sources, &measured);
    if (!fitted.is_ok()) return fitted.status();
    r.costs = "runs";
    r.costs_from = costs_paths;
    profile = std::move(*fitted);
  } else if (profile_prices_all(run->plan, base)) {
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
  add_key_errors(*run, own, detail::twin_key_means(run->plan, *twin), &r);
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
