#include "calibrators/flowtrain/flowtrain_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/statistics.h"

namespace clustertwin::calibrators {
namespace {

std::vector<double> measured_steps(const FlowTrainRun& run, int first_step) {
  std::vector<double> out;
  for (size_t k = static_cast<size_t>(std::max(0, first_step)); k < run.step_s.size(); ++k)
    out.push_back(run.step_s[k]);
  return out;
}

StatusOr<sim::flowtrain::FlowTrainProcessResult> twin(const FlowTrainRun& run,
                                                      const sim::flowtrain::FlowTrainProcessCosts& costs, int cores,
                                                      int first_step = 0) {
  sim::flowtrain::FlowTrainProcessSetup s = run.setup;
  s.cores = cores;
  return sim::flowtrain::run_flowtrain_process_twin(s, costs, first_step);
}

// On a GPU run, each key's device part (FlowTrainKeyCost::device_*) scaled round by round until the twin on the
// runs gives each key the mean time (start to end) its tasks took: ranks sharing a GPU wait for each other's
// device work, which the recorded times hold and the twin adds again, so the part a task needs alone is less.
Status fit_device_parts(const std::vector<const FlowTrainRun*>& runs, int first_step, int cores,
                        const std::map<std::string, std::pair<double, int64_t>>& real_wall,
                        sim::flowtrain::FlowTrainProcessCosts* costs) {
  constexpr int kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    std::map<std::string, std::pair<double, int64_t>> twin_wall;
    for (const FlowTrainRun* run : runs) {
      auto r = twin(*run, *costs, cores, first_step);
      if (!r.is_ok()) return r.status();
      for (const auto& [key, wall] : r->wall_s) {
        twin_wall[key].first += wall.first;
        twin_wall[key].second += wall.second;
      }
    }
    double worst = 0;
    for (auto& [key, c] : costs->keys) {
      auto real = real_wall.find(key);
      auto sim = twin_wall.find(key);
      if (real == real_wall.end() || sim == twin_wall.end() || real->second.second == 0 || sim->second.second == 0)
        continue;
      if (c.device_latency_s == 0 && c.device_seconds_per_unit == 0) continue;
      const double want = real->second.first / real->second.second, got = sim->second.first / sim->second.second;
      if (want <= 0 || got <= 0) continue;
      const double f = want / got;
      worst = std::max(worst, std::abs(f - 1));
      // The whole task's miss, put on its device part (the CPU part is measured as it is).
      c.device_latency_s *= f;
      c.device_seconds_per_unit *= f;
    }
    if (worst < 0.002) break;
  }
  return Status::ok();
}

double twin_total(const sim::flowtrain::FlowTrainProcessResult& r, int first_step) {
  double total = 0;
  for (size_t k = static_cast<size_t>(std::max(0, first_step)); k < r.step_s.size(); ++k)
    total += r.step_s[k];
  return total;
}

using KeyPoints = std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>;  // key -> x, y
using ExchangeKey = std::tuple<const FlowTrainRun*, int64_t, int64_t>;                         // run, step, bytes

// What the runs' events say of each cost key.
struct FlowTrainSamples {
  KeyPoints points;                                        // size, cpu seconds
  KeyPoints device;                                        // size, wait beyond the CPU
  std::map<std::string, std::pair<double, int64_t>> wall;  // key -> seconds, tasks
  bool on_gpu = false;
  std::map<ExchangeKey, double> exchange;                       // the least wait beyond CPU
  std::map<ExchangeKey, std::pair<double, int>> exchange_size;  // bytes, members
};

FlowTrainSamples flowtrain_samples(const std::vector<const FlowTrainRun*>& runs, int first_step) {
  FlowTrainSamples out;
  for (const FlowTrainRun* run : runs) {
    for (const traces::Event& e : run->events) {
      if (e.cost_key.empty() || e.cost_key == kFlowTrainStepKey || !e.cpu_us) continue;
      if (e.step && *e.step < first_step && run->setup.steps > first_step) continue;
      const double size = e.flops ? *e.flops : e.bytes ? static_cast<double>(*e.bytes) : 0;
      out.points[e.cost_key].first.push_back(size);
      out.points[e.cost_key].second.push_back(*e.cpu_us * 1e-6);
      if (run->setup.gpus > 0 && e.cost_key != "flowtrain/allreduce") {
        // On a GPU the thread's time beyond its CPU is the device's (the all-reduce's is its exchange, below).
        out.on_gpu = true;
        out.device[e.cost_key].first.push_back(size);
        out.device[e.cost_key].second.push_back(std::max(0.0, (e.dur_us - *e.cpu_us) * 1e-6));
        out.wall[e.cost_key].first += e.dur_us * 1e-6;
        ++out.wall[e.cost_key].second;
      }
      if (e.cost_key == "flowtrain/allreduce" && e.step && e.bytes) {
        // Per run, step and group (the buffer's size tells the sides apart): the least wait beyond the CPU, the
        // last member's, is the exchange itself.
        const double beyond = std::max(0.0, (e.dur_us - *e.cpu_us) * 1e-6);
        auto key = std::make_tuple(run, *e.step, *e.bytes);
        auto it = out.exchange.find(key);
        out.exchange[key] = it == out.exchange.end() ? beyond : std::min(it->second, beyond);
        out.exchange_size[key].first = static_cast<double>(*e.bytes);
        ++out.exchange_size[key].second;
      }
    }
  }
  return out;
}

// Each key's line through its CPU times, and on a GPU through its waits beyond the CPU.
void fit_key_lines(const FlowTrainSamples& samples, sim::flowtrain::FlowTrainProcessCosts* costs) {
  for (const auto& [key, xy] : samples.points) {
    const Line line = robust_line(xy.first, xy.second);
    sim::flowtrain::FlowTrainKeyCost c;
    c.latency_s = line.intercept;
    c.seconds_per_unit = line.slope;
    // A single size (every event alike): the mean as a per-unit rate, so that other sizes scale.
    if (line.slope == 0 && !xy.first.empty() && xy.first.front() > 0) {
      c.latency_s = 0;
      c.seconds_per_unit = line.intercept / xy.first.front();
    }
    auto d = samples.device.find(key);
    if (d != samples.device.end()) {
      const Line tail = robust_line(d->second.first, d->second.second);
      c.device_latency_s = std::max(0.0, tail.intercept);
      c.device_seconds_per_unit = std::max(0.0, tail.slope);
      if (tail.slope == 0 && !d->second.first.empty() && d->second.first.front() > 0) {
        c.device_latency_s = 0;
        c.device_seconds_per_unit = std::max(0.0, tail.intercept) / d->second.first.front();
      }
    }
    costs->keys[key] = c;
  }
}

// The hand-off keys copy bytes alike (into a pool slot, out of one, into a send buffer): a mode's key the fitting
// runs lack takes a sibling's line; where the runs have none (monolithic hands nothing off), the line of the copy
// every run makes, a sample's upload (flowtrain/data): a copy's own cost without the pool's synchronisation.
void borrow_handoff_lines(sim::flowtrain::FlowTrainProcessCosts* costs, std::vector<std::string>* notes) {
  for (const char* key : {"flowtrain/transfer", "flowtrain/pool_put", "flowtrain/pool_take"}) {
    if (costs->keys.count(key) > 0) continue;
    for (const char* sibling : {"flowtrain/pool_put", "flowtrain/pool_take", "flowtrain/transfer", "flowtrain/data"}) {
      if (costs->keys.count(sibling) > 0) {
        costs->keys[key] = costs->keys[sibling];
        if (std::string(sibling) == "flowtrain/data" && notes != nullptr)
          notes->push_back(std::string(key) +
                           ": not in the runs fitted; priced as their sample upload (flowtrain/data)");
        break;
      }
    }
  }
}

// The exchange, per byte of the all-reduced buffer and ring factor 2 (n - 1) / n, so that a larger group or
// buffer (monolithic's whole model on every rank) scales.
double exchange_seconds_per_byte(const FlowTrainSamples& samples) {
  std::vector<double> per_byte;
  for (const auto& [key, beyond] : samples.exchange) {
    const auto& [bytes, members] = samples.exchange_size.at(key);
    if (bytes > 0 && members > 1) per_byte.push_back(beyond / (bytes * 2.0 * (members - 1) / members));
  }
  return quantile(per_byte, 0.5);
}

// The hand-off latency: the one value (bisection in [0, 20 ms]) giving the runs' total measured step time.
Status fit_handoff_latency(const std::vector<const FlowTrainRun*>& runs, int first_step, int cores,
                           sim::flowtrain::FlowTrainProcessCosts* costs) {
  double measured = 0;
  for (const FlowTrainRun* run : runs) {
    for (double s : measured_steps(*run, first_step))
      measured += s;
  }
  auto total_at = [&](double latency) -> StatusOr<double> {
    sim::flowtrain::FlowTrainProcessCosts c = *costs;
    c.handoff_latency_s = latency;
    double total = 0;
    for (const FlowTrainRun* run : runs) {
      auto r = twin(*run, c, cores);
      if (!r.is_ok()) return r.status();
      total += twin_total(*r, first_step);
    }
    return total;
  };
  double lo = 0, hi = 0.02;
  auto at_lo = total_at(lo);
  if (!at_lo.is_ok()) return at_lo.status();
  if (*at_lo >= measured) return Status::ok();  // no latency needed (or the costs alone overshoot)
  auto at_hi = total_at(hi);
  if (!at_hi.is_ok()) return at_hi.status();
  if (*at_hi <= measured) {
    costs->handoff_latency_s = hi;
    return Status::ok();
  }
  for (int i = 0; i < 14; ++i) {
    const double mid = (lo + hi) / 2;
    auto t = total_at(mid);
    if (!t.is_ok()) return t.status();
    (*t < measured ? lo : hi) = mid;
  }
  costs->handoff_latency_s = (lo + hi) / 2;
  return Status::ok();
}

}  // namespace

StatusOr<sim::flowtrain::FlowTrainProcessCosts> fit_flowtrain_costs(const std::vector<const FlowTrainRun*>& runs,
                                                                    int first_step, int cores,
                                                                    std::vector<std::string>* notes) {
  if (runs.empty()) return Status::invalid_argument("fit: no runs");
  sim::flowtrain::FlowTrainProcessCosts costs;
  const FlowTrainSamples samples = flowtrain_samples(runs, first_step);
  fit_key_lines(samples, &costs);
  borrow_handoff_lines(&costs, notes);
  costs.exchange_s_per_byte = exchange_seconds_per_byte(samples);
  if (samples.on_gpu) CT_RETURN_IF_ERROR(fit_device_parts(runs, first_step, cores, samples.wall, &costs));
  // Only runs that hand samples off measure the hand-off latency: monolithic's leave it 0, which a prediction of a
  // split mode from them then assumes (and says so).
  if (std::none_of(runs.begin(), runs.end(), [](const FlowTrainRun* r) { return r->setup.mode != "monolithic"; })) {
    if (notes != nullptr)
      notes->push_back("hand-off latency: not measured (the runs fitted hand nothing off); 0 assumed");
    return costs;
  }
  CT_RETURN_IF_ERROR(fit_handoff_latency(runs, first_step, cores, &costs));
  return costs;
}

StatusOr<FlowTrainCheck> check_flowtrain(const FlowTrainRun& run, const sim::flowtrain::FlowTrainProcessCosts& costs,
                                         int cores, int first_step) {
  auto r = twin(run, costs, cores);
  if (!r.is_ok()) return r.status();
  FlowTrainCheck c;
  c.mode = run.setup.mode;
  c.world = run.setup.world;
  c.encoders = run.setup.mode == "monolithic" ? 0 : run.setup.encoders;
  c.cores = cores;
  c.first_step = std::min(first_step, run.setup.steps - 1);
  c.costs = costs;
  std::vector<double> twin_steps;
  for (size_t k = static_cast<size_t>(c.first_step); k < r->step_s.size(); ++k)
    twin_steps.push_back(r->step_s[k]);
  c.real_step_s = quantile(measured_steps(run, c.first_step), 0.5);
  c.twin_step_s = quantile(twin_steps, 0.5);
  c.error = c.real_step_s > 0 ? (c.twin_step_s - c.real_step_s) / c.real_step_s : 0;
  c.real_samples_per_s = run.setup.global_batch / c.real_step_s;
  c.twin_samples_per_s = run.setup.global_batch / c.twin_step_s;
  if (run.matmul_flops_per_s > 0) {
    double flops = 0;
    int steps = 0;
    for (int k = c.first_step; k < run.setup.steps; ++k, ++steps) {
      for (const models::flowtrain::TinySample& s :
           models::flowtrain::tiny_step(run.setup.facts, run.setup.seed, k, run.setup.global_batch))
        flops += s.encoder_flops + s.backbone_flops;
    }
    const double per_step = flops / steps, peak = run.setup.world * run.matmul_flops_per_s;
    c.real_mfu = per_step / (c.real_step_s * peak);
    c.twin_mfu = per_step / (c.twin_step_s * peak);
  }
  return c;
}

StatusOr<std::vector<FlowTrainCheck>> check_flowtrain_runs(const std::vector<std::string>& reals,
                                                           const std::vector<std::string>& costs_from, int first_step,
                                                           int fit_cores, int cores) {
  std::vector<FlowTrainRun> runs, others;
  for (const std::string& path : reals) {
    auto run = read_flowtrain_run(path);
    if (!run.is_ok()) return run.status();
    runs.push_back(std::move(*run));
  }
  if (runs.empty()) return Status::invalid_argument("reals: give at least one trace");
  for (const std::string& path : costs_from) {
    auto run = read_flowtrain_run(path);
    if (!run.is_ok()) return run.status();
    others.push_back(std::move(*run));
  }
  std::vector<FlowTrainCheck> checks;
  for (const FlowTrainRun& real : runs) {
    std::vector<const FlowTrainRun*> sources;
    for (const auto& o : others)
      sources.push_back(&o);
    if (sources.empty()) sources.push_back(&real);
    std::vector<std::string> notes;
    auto costs = fit_flowtrain_costs(sources, first_step, fit_cores, &notes);
    if (!costs.is_ok()) return costs.status();
    auto c = check_flowtrain(real, *costs, cores, first_step);
    if (!c.is_ok()) return c.status().with_context(real.path);
    c->notes = std::move(notes);
    c->trace = real.path;
    checks.push_back(std::move(*c));
  }
  return checks;
}

}  // namespace clustertwin::calibrators
