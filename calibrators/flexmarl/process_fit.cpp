#include "calibrators/flexmarl/process_fit.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "calibrators/recorded_run.h"
#include "common/statistics.h"
#include "models/flexmarl/frameworks.h"
#include "traces/trace_reader.h"

namespace clustertwin::calibrators {
namespace {

namespace cf = clustertwin::models::flexmarl;

// The controller's step events: step -> seconds and CPU seconds.
std::map<int64_t, std::pair<double, double>> controller_steps(const FlexMarlRun& run) {
  std::map<int64_t, std::pair<double, double>> steps;
  for (const traces::Event& e : run.events) {
    if (e.rank == 0 && e.cost_key == "flexmarl/step" && e.step) {
      steps[*e.step] = {e.dur_us * 1e-6, e.cpu_us.value_or(0) * 1e-6};
    }
  }
  return steps;
}

bool worker_job(const traces::Event& e) {
  return e.rank > 0 && e.cost_key.rfind("flexmarl/", 0) == 0 && e.step;
}

}  // namespace

namespace {

Status bad_flexmarl_config(const std::string& path, const std::string& field, const std::string& why) {
  return Status::invalid_argument(path + ": field 'metadata.config." + field + "': " + why);
}

// The orchestrator's setup and the run's steps, from its config.
Status read_flexmarl_setup(const std::string& path, const nlohmann::json& config, sim::flexmarl::ProcessTwinSetup* s) {
  auto integer = [&](const char* field, int min, int* out) -> Status {
    if (!config.contains(field) || !config[field].is_number_integer() || config[field].get<int64_t>() < min ||
        config[field].get<int64_t>() > 1'000'000) {
      return bad_flexmarl_config(path, field, "missing or not an integer >= " + std::to_string(min));
    }
    *out = config[field].get<int>();
    return Status::ok();
  };
  int world = 0, trainers = 0;
  CT_RETURN_IF_ERROR(integer("world_size", 2, &world));
  CT_RETURN_IF_ERROR(integer("steps", 1, &s->steps));
  CT_RETURN_IF_ERROR(integer("queries", 1, &s->orchestrator.queries));
  CT_RETURN_IF_ERROR(integer("group", 1, &s->orchestrator.group));
  CT_RETURN_IF_ERROR(integer("micro_batch", 1, &s->orchestrator.micro_batch));
  CT_RETURN_IF_ERROR(integer("rollout_batch", 1, &s->orchestrator.rollout_batch));
  CT_RETURN_IF_ERROR(integer("trainers", 0, &trainers));
  s->orchestrator.workers = world - 1;
  s->orchestrator.trainers = std::max(trainers, 1);
  if (!config.contains("framework") || !config["framework"].is_string() ||
      !cf::framework_from_name(config["framework"].get<std::string>())) {
    return bad_flexmarl_config(path, "framework", "missing or not a framework");
  }
  s->orchestrator.framework = *cf::framework_from_name(config["framework"].get<std::string>());
  if (!config.contains("load_gap") || !config["load_gap"].is_number()) {
    return bad_flexmarl_config(path, "load_gap", "missing");
  }
  s->orchestrator.load_gap = config["load_gap"].get<double>();
  if (!config.contains("seed") || !config["seed"].is_number_unsigned()) {
    return bad_flexmarl_config(path, "seed", "missing");
  }
  s->orchestrator.seed = config["seed"].get<uint64_t>();
  s->orchestrator.token_normalised = config.value("loss", "") == "dapo";
  // The twin replays the small task alone (the orchestrator's default, the shipped traces'; traces from before
  // --task have no field): its costs are fitted per agent, and a large run's policies are other models.
  if (config.contains("task") && (!config["task"].is_string() || config["task"].get<std::string>() != "small")) {
    return bad_flexmarl_config(path, "task", config["task"].dump() + ": the process twin knows only the small task");
  }
  return Status::ok();
}

// Each step's response tokens, per agent, as the run recorded them.
Status read_response_tokens(const std::string& path, const nlohmann::json& config, sim::flexmarl::ProcessTwinSetup* s) {
  const auto& tokens = config.contains("response_tokens") ? config["response_tokens"] : nlohmann::json();
  if (!tokens.is_array() || tokens.size() != static_cast<size_t>(s->steps)) {
    return bad_flexmarl_config(path, "response_tokens",
                               "missing or not one entry per step (recorded by clustertwin run flexmarl --trace)");
  }
  for (size_t k = 0; k < tokens.size(); ++k) {
    if (!tokens[k].is_array() || tokens[k].size() != static_cast<size_t>(cf::kTaskTurns)) {
      return bad_flexmarl_config(path, "response_tokens[" + std::to_string(k) + "]", "not one list per agent");
    }
    std::array<std::vector<int64_t>, cf::kTaskTurns> step;
    for (size_t a = 0; a < step.size(); ++a) {
      for (const auto& v : tokens[k][a]) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0) {
          return bad_flexmarl_config(path, "response_tokens[" + std::to_string(k) + "][" + std::to_string(a) + "]",
                                     "not a list of token counts");
        }
        step[a].push_back(v.get<int64_t>());
      }
    }
    s->response_tokens.push_back(std::move(step));
  }
  return Status::ok();
}

}  // namespace

StatusOr<FlexMarlRun> read_flexmarl_run(const std::string& path) {
  auto trace = read_system_trace(path, "flexmarl");
  if (!trace.is_ok()) return trace.status();
  FlexMarlRun run;
  run.path = path;
  run.metadata = std::move(trace->metadata);
  run.events = std::move(trace->events);
  const nlohmann::json& config = trace->config;
  CT_RETURN_IF_ERROR(read_flexmarl_setup(path, config, &run.setup));
  CT_RETURN_IF_ERROR(read_response_tokens(path, config, &run.setup));
  return run;
}

namespace {

// The worker jobs' CPU times from `first_step` on (the warm-up's for jobs only it ran), and the controller's CPU
// over those steps.
struct WorkerJobs {
  std::vector<TaskSample> samples;
  double controller_cpu = 0;
  int64_t jobs = 0;  // from first_step on
};

StatusOr<WorkerJobs> worker_job_samples(const std::vector<const FlexMarlRun*>& runs, int first_step) {
  WorkerJobs out;
  std::vector<TaskSample> warmup;
  for (const FlexMarlRun* run : runs) {
    const auto steps = controller_steps(*run);
    for (const auto& [step, t] : steps) {
      if (step >= first_step) out.controller_cpu += t.second;
    }
    for (const traces::Event& e : run->events) {
      if (!worker_job(e)) continue;
      if (!e.cpu_us) {
        return Status::invalid_argument(run->path + ": event '" + e.name + "': field 'cpu_us' missing (the process " +
                                        "twin prices jobs by CPU time)");
      }
      const bool flops = e.flops.has_value();
      TaskSample t{e.cost_key, *e.cpu_us * 1e-6, flops ? *e.flops : static_cast<double>(e.bytes.value_or(0)), flops, 0};
      if (*e.step >= first_step) {
        ++out.jobs;
        out.samples.push_back(std::move(t));
      } else {
        warmup.push_back(std::move(t));
      }
    }
  }
  // Jobs only the warm-up ran (sync's and marti's initial swap-ins) are priced from it.
  std::set<std::string> measured;
  for (const TaskSample& t : out.samples)
    measured.insert(t.cost_key);
  for (TaskSample& t : warmup) {
    if (!measured.count(t.cost_key)) out.samples.push_back(std::move(t));
  }
  if (out.samples.empty()) {
    return Status::invalid_argument("fit: no worker jobs from step " + std::to_string(first_step) +
                                    " on in the costs' traces (run more steps)");
  }
  return out;
}

// A swap moves the same state either way: a direction the runs never took is priced as the other.
void price_missing_swaps(sim::flexmarl::ProcessTwinCosts* costs) {
  for (int agent = 0; agent < cf::kTaskTurns; ++agent) {
    const std::string& name = cf::task_agent_name(agent);
    const std::string in = "flexmarl/swap-in/" + name, out = "flexmarl/swap-out/" + name;
    if (costs->keys.count(in) && !costs->keys.count(out)) costs->keys[out] = costs->keys[in];
    if (costs->keys.count(out) && !costs->keys.count(in)) costs->keys[in] = costs->keys[out];
  }
}

// All-reduce steps: per (key, run, step) instance, last start to end, less the members' mean CPU.
void fit_exchanges(const std::vector<const FlexMarlRun*>& runs, sim::flexmarl::ProcessTwinCosts* costs) {
  std::map<std::string, std::vector<double>> exchanges;
  for (size_t r = 0; r < runs.size(); ++r) {
    std::map<std::pair<std::string, int64_t>, std::vector<const traces::Event*>> groups;
    for (const traces::Event& e : runs[r]->events) {
      if (worker_job(e) && e.cost_key.rfind("flexmarl/step/", 0) == 0 && e.bytes.value_or(0) > 0)
        groups[{e.cost_key, *e.step}].push_back(&e);
    }
    for (const auto& [key, members] : groups) {
      double last_start = 0, end = 0, cpu = 0;
      for (const traces::Event* e : members) {
        last_start = std::max(last_start, e->ts_us);
        end = std::max(end, e->end_us());
        cpu += e->cpu_us.value_or(0);
      }
      exchanges[key.first].push_back(std::max(0.0, end - last_start - cpu / static_cast<double>(members.size())) *
                                     1e-6);
    }
  }
  for (auto& [key, values] : exchanges) {
    auto it = costs->keys.find(key);
    if (it != costs->keys.end()) it->second.collective_s = quantile(values, 0.5);
  }
}

// The message latency: the twin's total measured step time against the runs' (bisection in [0, 50 ms]).
Status fit_message_latency(const std::vector<const FlexMarlRun*>& runs, int first_step, int cores,
                           sim::flexmarl::ProcessTwinCosts* costs) {
  double real_total = 0;
  for (const FlexMarlRun* run : runs) {
    for (const auto& [step, t] : controller_steps(*run)) {
      if (step >= first_step) real_total += t.first;
    }
  }
  auto twin_total = [&](double latency) -> StatusOr<double> {
    sim::flexmarl::ProcessTwinCosts c = *costs;
    c.message_latency_s = latency;
    double total = 0;
    for (const FlexMarlRun* run : runs) {
      sim::flexmarl::ProcessTwinSetup setup = run->setup;
      setup.cores = cores;
      auto twin = sim::flexmarl::run_process_twin(setup, c);
      if (!twin.is_ok()) return twin.status().with_context(run->path);
      for (size_t k = static_cast<size_t>(first_step); k < twin->step_s.size(); ++k)
        total += twin->step_s[k];
    }
    return total;
  };
  double lo = 0, hi = 0.05;
  auto at_zero = twin_total(0);
  if (!at_zero.is_ok()) return at_zero.status();
  if (*at_zero < real_total) {
    for (int i = 0; i < 14; ++i) {
      const double mid = (lo + hi) / 2;
      auto t = twin_total(mid);
      if (!t.is_ok()) return t.status();
      (*t < real_total ? lo : hi) = mid;
    }
    costs->message_latency_s = (lo + hi) / 2;
  }
  return Status::ok();
}

}  // namespace

StatusOr<sim::flexmarl::ProcessTwinCosts> fit_process_costs(const std::vector<const FlexMarlRun*>& runs, int first_step,
                                                            int cores, std::vector<KeyFit>* fits_out) {
  auto jobs = worker_job_samples(runs, first_step);
  if (!jobs.is_ok()) return jobs.status();
  std::vector<KeyFit> fits = fit_keys(jobs->samples);
  sim::flexmarl::ProcessTwinCosts costs;
  for (const KeyFit& f : fits)
    costs.keys[f.cost_key] = sim::flexmarl::ProcessKeyCost{f.latency_s, f.seconds_per_unit, f.mean_size};
  price_missing_swaps(&costs);
  costs.controller_s_per_job = jobs->jobs > 0 ? jobs->controller_cpu / static_cast<double>(jobs->jobs) : 0;
  fit_exchanges(runs, &costs);
  CT_RETURN_IF_ERROR(fit_message_latency(runs, first_step, cores, &costs));
  if (fits_out != nullptr) *fits_out = std::move(fits);
  return costs;
}

namespace {

// The workers' jobs, real against twin: their CPU utilisation and each key's mean time.
void compare_jobs(const FlexMarlRun& run, const sim::flexmarl::ProcessTwinResult& twin, int first_step,
                  double real_total, double twin_total, FlexMarlCheck* c) {
  // Utilisation: CPU in the workers' jobs over the workers' time.
  std::map<std::string, FlexMarlCheck::Key> keys;
  double real_cpu = 0;
  for (const traces::Event& e : run.events) {
    if (!worker_job(e) || *e.step < first_step) continue;
    real_cpu += e.cpu_us.value_or(0) * 1e-6;
    FlexMarlCheck::Key& k = keys[e.cost_key];
    ++k.real_jobs;
    k.real_s += e.dur_us * 1e-6;
  }
  double twin_cpu = 0;
  for (const sim::flexmarl::ProcessJob& j : twin.jobs) {
    if (j.step < first_step || j.step >= run.setup.steps) continue;
    twin_cpu += j.cpu_s;
    FlexMarlCheck::Key& k = keys[j.cost_key];
    ++k.twin_jobs;
    k.twin_s += j.end_s - j.start_s;
  }
  c->real_cpu_utilization = real_total > 0 ? real_cpu / (c->workers * real_total) : 0;
  c->twin_cpu_utilization = twin_total > 0 ? twin_cpu / (c->workers * twin_total) : 0;
  for (auto& [key, k] : keys) {
    k.cost_key = key;
    if (k.real_jobs > 0) k.real_s /= static_cast<double>(k.real_jobs);
    if (k.twin_jobs > 0) k.twin_s /= static_cast<double>(k.twin_jobs);
    k.error = k.real_s > 0 ? (k.twin_s - k.real_s) / k.real_s : 0;
    c->per_key.push_back(k);
  }
}

}  // namespace

StatusOr<FlexMarlCheck> check_flexmarl(const FlexMarlRun& run, const sim::flexmarl::ProcessTwinCosts& costs, int cores,
                                       int first_step) {
  if (first_step < 0 || first_step >= run.setup.steps) {
    return Status::invalid_argument("first_step " + std::to_string(first_step) + ": the run has " +
                                    std::to_string(run.setup.steps) + " steps (leave at least one measured)");
  }
  sim::flexmarl::ProcessTwinSetup setup = run.setup;
  setup.cores = cores;
  auto twin = sim::flexmarl::run_process_twin(setup, costs);
  if (!twin.is_ok()) return twin.status();
  FlexMarlCheck c;
  c.costs = costs;
  c.framework = std::string(cf::framework_name(setup.orchestrator.framework));
  c.workers = setup.orchestrator.workers;
  c.cores = cores;
  c.first_step = first_step;
  const auto steps = controller_steps(run);
  std::vector<double> real, sim;
  double real_total = 0, twin_total = 0;
  for (int k = first_step; k < run.setup.steps; ++k) {
    auto it = steps.find(k);
    if (it == steps.end()) {
      return Status::invalid_argument(run.path + ": no controller event of step " + std::to_string(k) +
                                      " (cost_key 'flexmarl/step' on rank 0)");
    }
    real.push_back(it->second.first);
    real_total += it->second.first;
    sim.push_back(twin->step_s[static_cast<size_t>(k)]);
    twin_total += twin->step_s[static_cast<size_t>(k)];
  }
  c.real_step_s = quantile(real, 0.5);
  c.twin_step_s = quantile(sim, 0.5);
  c.error = c.real_step_s > 0 ? (c.twin_step_s - c.real_step_s) / c.real_step_s : 0;
  compare_jobs(run, *twin, first_step, real_total, twin_total, &c);
  return c;
}

StatusOr<std::vector<FlexMarlCheck>> check_flexmarl_runs(const std::vector<std::string>& reals,
                                                         const std::vector<std::string>& costs_from, int first_step,
                                                         int fit_cores, int cores,
                                                         const std::vector<std::pair<std::string, double>>& scales) {
  std::vector<FlexMarlRun> runs, others;
  for (const std::string& path : reals) {
    auto run = read_flexmarl_run(path);
    if (!run.is_ok()) return run.status();
    runs.push_back(std::move(*run));
  }
  if (runs.empty()) return Status::invalid_argument("reals: give at least one trace");
  for (const FlexMarlRun& run : runs) {
    // Named here, before a path is put in front of check_flexmarl's errors, so that the field leads the message.
    if (first_step < 0 || first_step >= run.setup.steps) {
      return Status::invalid_argument("first_step " + std::to_string(first_step) + ": " + run.path + " has " +
                                      std::to_string(run.setup.steps) + " steps (leave at least one measured)");
    }
  }
  for (const std::string& path : costs_from) {
    auto run = read_flexmarl_run(path);
    if (!run.is_ok()) return run.status();
    others.push_back(std::move(*run));
  }
  std::vector<FlexMarlCheck> checks;
  for (const FlexMarlRun& real : runs) {
    std::vector<const FlexMarlRun*> sources;
    for (const auto& o : others)
      sources.push_back(&o);
    if (sources.empty()) sources.push_back(&real);
    std::vector<KeyFit> fits;
    auto costs = fit_process_costs(sources, first_step, fit_cores, &fits);
    if (!costs.is_ok()) return costs.status();
    for (const auto& [prefix, factor] : scales) {
      bool any = false;
      for (auto& [key, cost] : costs->keys) {
        if (key.rfind(prefix, 0) != 0) continue;
        cost.latency_s *= factor;
        cost.seconds_per_unit *= factor;
        any = true;
      }
      if (!any) {
        return Status::invalid_argument("scales: no cost key starts with '" + prefix +
                                        "' (kinds: generate, train, step, load, swap-in, swap-out)");
      }
    }
    auto check = check_flexmarl(real, *costs, cores, first_step);
    if (!check.is_ok()) return check.status().with_context(real.path);
    check->trace = real.path;
    check->fits = std::move(fits);
    checks.push_back(std::move(*check));
  }
  return checks;
}

}  // namespace clustertwin::calibrators
