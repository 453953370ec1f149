#include "calibrators/calibrate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "calibrators/step_wait.h"
#include "common/statistics.h"
#include "models/cluster/cluster_profile_yaml.h"
#include "sim/core/task_cost.h"
#include "traces/trace_reader.h"

namespace clustertwin::calibrators {
namespace {

std::string format(const char* pattern, double a, double b = 0, double c = 0, double d = 0, double e = 0,
                   double f = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c, d, e, f);
  return text;
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// What the traces given to calibrate hold: benchmark samples, and the recorded runs with their task samples.
struct CalibrationTraces {
  std::vector<CollectiveSample> bench;
  std::vector<TaskSample> tasks;
  std::vector<RecordedRun> runs;  // reserved up front: `measured` points into it
  std::vector<MeasuredRun> measured;
};

// Each trace as a collective benchmark or a recorded run, its name added to `c`'s lists.
Status read_calibration_traces(const std::vector<std::string>& paths, const CalibrateOptions& options, Calibration* c,
                               CalibrationTraces* in) {
  in->runs.reserve(paths.size());
  for (const std::string& path : paths) {
    auto trace = traces::read_trace(path);
    if (!trace.is_ok()) return trace.status();
    if (trace->metadata.system == "collectives") {
      auto samples = collective_samples(*trace, path);
      if (!samples.is_ok()) return samples.status();
      if (samples->empty()) return Status::invalid_argument(path + ": a collective benchmark without timed operations");
      in->bench.insert(in->bench.end(), samples->begin(), samples->end());
      c->bench_traces.push_back(path);
      continue;
    }
    auto run = read_recorded_run(path);
    if (!run.is_ok()) return run.status();
    const int first = run->prologue_steps + options.warmup, last = run->runner_steps - 1 - options.drain;
    if (options.warmup < 0 || options.drain < 0 || last < first) {
      return Status::invalid_argument(path + ": --warmup " + std::to_string(options.warmup) + " --drain " +
                                      std::to_string(options.drain) + " leave no step of its " +
                                      std::to_string(run->runner_steps) + " runner steps to fit");
    }
    const auto samples = task_samples(*run, first, last);
    in->tasks.insert(in->tasks.end(), samples.begin(), samples.end());
    c->run_traces.push_back(path);
    in->runs.push_back(std::move(*run));
    in->measured.push_back({&in->runs.back(), first, last});
  }
  return Status::ok();
}

// On shared cores a collective's wait per latency step, measured from the runs' own collectives or from the
// benchmarks at each rank count (--step-waits), else the base's if it has one: out of the runs' collectives
// before their keys are fitted. Returns the base with those waits.
StatusOr<cluster::ClusterProfile> profile_with_step_waits(const cluster::ClusterProfile& base,
                                                          const CalibrateOptions& options, const CalibrationTraces& in,
                                                          size_t run_traces) {
  cluster::ClusterProfile machine = base;
  if (options.step_waits == StepWaitSource::kAuto) {
    if (!options.collectives_from_network) add_run_step_waits_by_default(in.tasks, &machine);
  } else if (options.step_waits != StepWaitSource::kNone) {
    const bool from_runs = options.step_waits == StepWaitSource::kRuns;
    const std::string field = from_runs ? "step_waits runs" : "step_waits benchmarks";
    if (base.node_cores <= 0) {
      return Status::invalid_argument(field + ": needs a base whose ranks share cores (node_cores > 0); base '" +
                                      base.name + "' has node_cores " + std::to_string(base.node_cores));
    }
    if (!from_runs && in.bench.empty()) {
      return Status::invalid_argument(field + ": needs collective benchmarks among the traces; " +
                                      std::to_string(run_traces) + " run trace(s) and no benchmark given");
    }
    if (from_runs) {
      const auto waits = measure_run_key_waits(in.tasks);
      if (waits.empty()) {
        return Status::invalid_argument(field + ": no collective among the " + std::to_string(run_traces) +
                                        " run trace(s) records its CPU time (cpu_us) to measure a wait from");
      }
      add_key_waits(waits, &machine);
    } else {
      add_step_waits(measure_step_waits(in.bench, options.network), &machine);
    }
  }
  return machine;
}

// A GPU node's launch cost, from the launches profiler traces link to their device work (the runtime call's
// host time, as Kineto records it): the median, so that a launch that blocked on a full queue does not count.
void fit_launch_cost(const std::vector<RecordedRun>& runs, Calibration* c) {
  std::vector<double> launch_s;
  for (const RecordedRun& run : runs) {
    if (run.metadata.source != traces::Source::kImported) continue;
    for (const traces::Event& e : run.events) {
      if ((e.category == traces::Category::kCompute || e.category == traces::Category::kCopy) && e.host_dur_us)
        launch_s.push_back(*e.host_dur_us * 1e-6);
    }
  }
  if (!launch_s.empty()) {
    c->launches = static_cast<int64_t>(launch_s.size());
    c->profile.host.launch = quantile(launch_s, 0.5);
  }
}

// Every task of every run must be priced by the profile written: a key the fitted steps hold no sample of and
// the base does not price (host work has no roofline) is refused here, naming the trace, not in validate.
Status check_every_task_priced(const std::vector<RecordedRun>& runs, const cluster::ClusterProfile& profile) {
  for (const RecordedRun& run : runs) {
    for (const models::Task& t : run.plan.tasks) {
      if (t.kind == models::TaskKind::kCollective || t.kind == models::TaskKind::kCopy) continue;
      auto seconds = sim::task_seconds(t, profile.device, profile);
      if (!seconds.is_ok()) {
        return Status::invalid_argument(run.path + ": " + seconds.status().message() +
                                        " (no sample of it in the fitted steps: give more steps, or --warmup 0)");
      }
    }
  }
  return Status::ok();
}

// The cost keys' table: each key's samples and fitted line.
std::string key_fits_table(const Calibration& c) {
  std::string out =
      "# cost keys: mean/median/IQR of the samples (ready to end), the fitted line (collectives: latency per\n"
      "# latency step, rate in bus bytes), its largest miss per size";
  out += c.profile.node_cores > 0 ? "; the profile holds these as core-seconds (node_cores)\n" : "\n";
  if (has_step_waits(c.profile))
    out += "# collectives: their time less the wait per latency step below, which the twin adds back\n";
  // The key column is as wide as the longest key (an imported trace's
  // kernel names run long), so the numbers stay in their columns.
  size_t width = 18;
  for (const KeyFit& f : c.keys)
    width = std::max(width, f.cost_key.size());
  const auto key_cell = [width](const std::string& key) { return "  " + key + std::string(width - key.size(), ' '); };
  char line[256];
  std::snprintf(line, sizeof line, " %8s %10s %10s %10s %12s %16s %8s\n", "samples", "mean ms", "median ms", "IQR ms",
                "latency ms", "rate", "residual");
  out += key_cell("cost key") + line;
  for (const KeyFit& f : c.keys) {
    std::string rate = "-";
    if (f.seconds_per_unit > 0) {
      rate = f.size_is_flops ? format("%.4g GFLOP/s", 1e-9 / f.seconds_per_unit)
                             : format("%.4g GB/s", 1e-9 / f.seconds_per_unit);
    }
    std::snprintf(line, sizeof line, " %8lld %10.3f %10.3f %10.3f %12.4f %16s %7.2f%%\n",
                  static_cast<long long>(f.samples), f.mean_s * 1e3, f.median_s * 1e3, f.spread_s * 1e3,
                  f.latency_s * 1e3, rate.c_str(), 100 * f.max_abs_residual);
    out += key_cell(f.cost_key) + line;
  }
  return out;
}

// Each benchmarked collective's segments and its points against the fit.
std::string network_fits_table(const std::vector<NetworkFit>& network) {
  std::string out;
  for (const NetworkFit& n : network) {
    const std::string op(models::collective_op_name(n.op));
    out += "# " + op + ": " + std::to_string(n.segments.size()) + " segment(s)";
    for (const cluster::CollectiveSegment& s : n.segments) {
      out += format(" [from %.0f B: %.2f us/step, ", s.from_bytes, s.step_latency * 1e6);
      out += s.bus_bandwidth >= kLatencyOnlyBusBandwidth ? std::string("latency only]")
                                                         : format("%.4g GB/s bus]", s.bus_bandwidth * 1e-9);
    }
    out += format("; largest residual %.2f%%\n", 100 * n.max_abs_residual);
    char line[256];
    std::snprintf(line, sizeof line, "  %14s %6s %8s %12s %12s %10s %12s %9s\n", "size (B)", "ranks", "samples",
                  "mean us", "median us", "IQR us", "fitted us", "residual");
    out += line;
    for (const SizePoint& p : n.points) {
      std::snprintf(line, sizeof line, "  %14lld %6d %8d %12.1f %12.1f %10.1f %12.1f %+8.2f%%\n",
                    static_cast<long long>(p.bytes), p.group_size, p.samples, p.mean_s * 1e6, p.median_s * 1e6,
                    p.spread_s * 1e6, p.fitted_s * 1e6, 100 * p.residual);
      out += line;
    }
  }
  return out;
}

}  // namespace

StatusOr<Calibration> calibrate(const std::vector<std::string>& paths, const cluster::ClusterProfile& base,
                                const CalibrateOptions& options) {
  if (paths.empty()) return Status::invalid_argument("calibrate: give at least one trace");
  Calibration c;
  c.base = base.name;
  CalibrationTraces in;
  CT_RETURN_IF_ERROR(read_calibration_traces(paths, options, &c, &in));
  c.network = fit_network(in.bench, options.network);
  auto machine = profile_with_step_waits(base, options, in, c.run_traces.size());
  if (!machine.is_ok()) return machine.status();
  remove_step_waits(*machine, &in.tasks);
  c.keys = fit_keys(in.tasks);
  std::vector<std::string> to_network;  // collective keys the network prices instead
  if (options.collectives_from_network) {
    for (const KeyFit& f : c.keys) {
      if (f.collective) to_network.push_back(f.cost_key);
    }
    std::erase_if(c.keys, [](const KeyFit& f) { return f.collective; });
  }
  c.profile = profile_with_fits(*machine, c.keys);
  for (const std::string& key : to_network)
    c.profile.costs.erase(key);  // a base calibrated before may price them
  add_network_fits(c.network, &c.profile);
  if (c.profile.node_cores > 0 && !in.measured.empty()) {
    // Ranks share the node's cores: the costs become core-seconds that reproduce the runs in the twin.
    auto shared = fit_shared_cores(in.measured, c.profile);
    if (!shared.is_ok()) return shared.status();
    c.profile = std::move(*shared);
  }
  if (base.host.modelled()) fit_launch_cost(in.runs, &c);
  CT_RETURN_IF_ERROR(check_every_task_priced(in.runs, c.profile));
  if (!options.name.empty()) c.profile.name = options.name;
  std::string from;
  if (!c.bench_traces.empty()) from += std::to_string(c.bench_traces.size()) + " collective benchmark(s)";
  if (!c.run_traces.empty())
    from += (from.empty() ? "" : " and ") + std::to_string(c.run_traces.size()) + " recorded run(s)";
  c.profile.description = "the " + base.name + " profile calibrated on " + from + " by clustertwin calibrate";
  return c;
}

StatusOr<std::string> calibration_yaml(const Calibration& c) {
  std::string header = "Written by `clustertwin calibrate` on the base profile " + c.base + " from:\n";
  for (const std::string& t : c.bench_traces)
    header += "  " + file_name(t) + " (collective benchmark)\n";
  for (const std::string& t : c.run_traces)
    header += "  " + file_name(t) + " (recorded run)\n";
  header += "costs: each cost key's latency and rate, fitted on the runs; collectives.OP.fit: the benchmarked network";
  header += "; step_wait (a cost key's, or collectives.OP's): a collective's wait for the OS per latency step on";
  header += " shared cores.";
  return cluster::cluster_profile_yaml(c.profile, header);
}

std::string calibration_report(const Calibration& c) {
  std::string out = "# clustertwin calibrate: profile " + c.profile.name + " on base " + c.base + ", " +
                    std::to_string(c.bench_traces.size()) + " benchmark trace(s), " +
                    std::to_string(c.run_traces.size()) + " run trace(s)\n";
  if (!c.keys.empty()) out += key_fits_table(c);
  out += network_fits_table(c.network);
  for (const auto& [op, f] : c.profile.collectives) {
    if (f.step_wait.empty()) continue;
    out += "# " + op + ": wait per latency step on shared cores (the OS running its threads; step_wait.h):";
    for (const auto& [ranks, seconds] : f.step_wait)
      out += format(" %.0f ranks %.3f ms", ranks, seconds * 1e3);
    out += "\n";
  }
  if (c.launches > 0) {
    out +=
        format("# host launch: %.2f us, the median host time of the traces' %.0f launches (a GPU node's host.launch)\n",
               c.profile.host.launch * 1e6, static_cast<double>(c.launches));
  }
  for (const auto& [key, cost] : c.profile.costs) {
    if (cost.step_wait > 0)
      out += "# " + key + ": wait per latency step on shared cores (the OS running its threads; step_wait.h): " +
             format("%.3f ms\n", cost.step_wait * 1e3);
  }
  return out;
}

std::string calibration_json(const Calibration& c) {
  nlohmann::ordered_json j;
  j["profile"] = c.profile.name;
  j["base"] = c.base;
  j["bench_traces"] = c.bench_traces;
  j["run_traces"] = c.run_traces;
  j["cost_keys"] = nlohmann::ordered_json::array();
  for (const KeyFit& f : c.keys) {
    j["cost_keys"].push_back({{"cost_key", f.cost_key},
                              {"samples", f.samples},
                              {"mean_ms", f.mean_s * 1e3},
                              {"median_ms", f.median_s * 1e3},
                              {"iqr_ms", f.spread_s * 1e3},
                              {"size_unit", f.size_is_flops ? "flops" : "bytes"},
                              {"latency_ms", f.latency_s * 1e3},
                              {"ms_per_unit", f.seconds_per_unit * 1e3},
                              {"max_abs_residual", f.max_abs_residual}});
  }
  j["collectives"] = nlohmann::ordered_json::array();
  for (const NetworkFit& n : c.network) {
    nlohmann::ordered_json op;
    op["collective"] = models::collective_op_name(n.op);
    op["max_abs_residual"] = n.max_abs_residual;
    op["segments"] = nlohmann::ordered_json::array();
    for (const cluster::CollectiveSegment& s : n.segments) {
      op["segments"].push_back({{"from_bytes", s.from_bytes},
                                {"step_latency_us", s.step_latency * 1e6},
                                {"bus_gbps", s.bus_bandwidth * 1e-9}});
    }
    op["sizes"] = nlohmann::ordered_json::array();
    for (const SizePoint& p : n.points) {
      op["sizes"].push_back({{"bytes", p.bytes},
                             {"group_size", p.group_size},
                             {"samples", p.samples},
                             {"mean_us", p.mean_s * 1e6},
                             {"median_us", p.median_s * 1e6},
                             {"iqr_us", p.spread_s * 1e6},
                             {"fitted_us", p.fitted_s * 1e6},
                             {"residual", p.residual}});
    }
    j["collectives"].push_back(op);
  }
  j["step_waits"] = nlohmann::ordered_json::object();
  for (const auto& [op, f] : c.profile.collectives) {
    if (f.step_wait.empty()) continue;
    nlohmann::ordered_json by_ranks = nlohmann::ordered_json::array();
    for (const auto& [ranks, seconds] : f.step_wait)
      by_ranks.push_back({{"ranks", ranks}, {"seconds", seconds}});
    j["step_waits"][op] = by_ranks;
  }
  if (c.launches > 0) j["host_launch"] = {{"seconds", c.profile.host.launch}, {"launches", c.launches}};
  j["key_step_waits"] = nlohmann::ordered_json::object();  // seconds per latency step, by cost key
  for (const auto& [key, cost] : c.profile.costs) {
    if (cost.step_wait > 0) j["key_step_waits"][key] = cost.step_wait;
  }
  return j.dump(2) + "\n";
}

}  // namespace clustertwin::calibrators
