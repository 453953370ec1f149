// clustertwin validate: run the twin on what a recorded real run (or
// collective benchmark) did and report its error (calibrators/replay.h,
// calibrators/network_fit.h); exit 3 when it exceeds --max-error.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "calibrators/flowtrain_fit.h"
#include "calibrators/network_fit.h"
#include "calibrators/process_fit.h"
#include "calibrators/replay.h"
#include "calibrators/stats.h"
#include "cli/command.h"
#include "common/text.h"
#include "sim/core/cluster_profile.h"

namespace clustertwin::cli {
namespace {

struct ValidateArgs {
  std::string system;
  std::string real;
  std::string profile = "localhost-cpu";
  std::string costs_from;
  double max_error = 0;
  bool max_error_given = false;
  int warmup = 3;
  bool warmup_given = false;
  int cores = 0;                         // flexmarl: a what-if machine's cores (0: the profile's)
  std::vector<std::string> scale_costs;  // flexmarl: KIND=FACTOR what-ifs on the fitted costs
  int drain = 2;
  bool json = false;
};

std::string percent(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.2f%%", 100 * x);
  return text;
}

// Exit 3 when `error` exceeds --max-error.
Status check(const ValidateArgs& a, double error, const std::string& what) {
  if (!a.max_error_given || std::abs(error) <= a.max_error) return Status::ok();
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g%%", 100 * a.max_error);
  return Status::check_failed(a.real + ": " + what + " " + percent(error) + " exceeds --max-error " + limit);
}

Status validate_collectives(const ValidateArgs& a, const sim::ClusterProfile& profile) {
  auto checks = calibrators::check_collectives(split_commas(a.real), profile);
  if (!checks.is_ok()) return checks.status();
  const calibrators::CollectiveCheck* worst = nullptr;
  for (const auto& c : *checks) {
    if (worst == nullptr || std::abs(c.error) > std::abs(worst->error)) worst = &c;
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["system"] = "collectives";
    j["profile"] = profile.name;
    j["max_abs_error"] = worst ? std::abs(worst->error) : 0.0;
    j["sizes"] = nlohmann::ordered_json::array();
    for (const auto& c : *checks) {
      j["sizes"].push_back({{"collective", models::collective_op_name(c.op)},
                            {"bytes", c.bytes},
                            {"group_size", c.group_size},
                            {"samples", c.samples},
                            {"real_mean_us", c.real_mean_s * 1e6},
                            {"real_median_us", c.real_median_s * 1e6},
                            {"real_iqr_us", c.real_spread_s * 1e6},
                            {"twin_us", c.twin_s * 1e6},
                            {"error", c.error}});
    }
    CT_RETURN_IF_ERROR(write_output("-", j.dump(2) + "\n"));
  } else {
    std::printf("# clustertwin validate collectives: %s against the twin on profile %s\n", a.real.c_str(),
                profile.name.c_str());
    std::printf("  %-14s %12s %6s %8s %12s %12s %10s %12s %9s\n", "collective", "size (B)", "ranks", "samples",
                "real mean us", "median us", "IQR us", "twin us", "error");
    for (const auto& c : *checks) {
      std::printf("  %-14s %12lld %6d %8d %12.1f %12.1f %10.1f %12.1f %9s\n",
                  std::string(models::collective_op_name(c.op)).c_str(), static_cast<long long>(c.bytes), c.group_size,
                  c.samples, c.real_mean_s * 1e6, c.real_median_s * 1e6, c.real_spread_s * 1e6, c.twin_s * 1e6,
                  percent(c.error).c_str());
    }
    if (worst) {
      std::printf("# largest error %s (%s, %lld B)\n", percent(worst->error).c_str(),
                  std::string(models::collective_op_name(worst->op)).c_str(), static_cast<long long>(worst->bytes));
    }
  }
  return worst ? check(a, worst->error, "the largest collective-time error") : Status::ok();
}

// flexmarl: the process twin (sim/flexmarl/process_twin.h) on each run's
// framework, worker count and response lengths, priced by --costs-from's
// runs (or the run itself), on the profile's node cores.
Status validate_flexmarl(const ValidateArgs& a, const sim::ClusterProfile& profile) {
  if (profile.node_cores < 1) {
    return Status::invalid_argument("--profile " + a.profile +
                                    ": field 'node_cores' missing: the process twin needs the machine's cores");
  }
  const int first_step = a.warmup_given ? a.warmup : 1;
  if (a.cores < 0) return Status::invalid_argument("--cores " + std::to_string(a.cores) + ": must be >= 1");
  const int cores = a.cores > 0 ? a.cores : profile.node_cores;
  std::vector<calibrators::FlexMarlRun> reals, others;
  for (const std::string& path : split_commas(a.real)) {
    auto run = calibrators::read_flexmarl_run(path);
    if (!run.is_ok()) return run.status();
    reals.push_back(std::move(*run));
  }
  if (reals.empty()) return Status::invalid_argument("--real: give at least one trace");
  for (const std::string& path : a.costs_from.empty() ? std::vector<std::string>{} : split_commas(a.costs_from)) {
    auto run = calibrators::read_flexmarl_run(path);
    if (!run.is_ok()) return run.status();
    others.push_back(std::move(*run));
  }
  // --scale-costs KIND=FACTOR: every flexmarl/KIND/* cost times FACTOR.
  std::vector<std::pair<std::string, double>> scales;
  for (const std::string& spec : a.scale_costs) {
    const size_t eq = spec.find('=');
    double factor = 0;
    if (eq != std::string::npos) {
      const std::string text = spec.substr(eq + 1);
      char* end = nullptr;
      factor = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) factor = 0;
    }
    if (eq == std::string::npos || eq == 0 || !(factor > 0) || !std::isfinite(factor)) {
      return Status::invalid_argument("--scale-costs '" + spec +
                                      "': not KIND=FACTOR with a factor > 0 (for example generate=5)");
    }
    scales.emplace_back("flexmarl/" + spec.substr(0, eq) + "/", factor);
  }
  std::vector<calibrators::FlexMarlCheck> checks;
  for (const calibrators::FlexMarlRun& real : reals) {
    std::vector<const calibrators::FlexMarlRun*> sources;
    for (const auto& o : others)
      sources.push_back(&o);
    if (sources.empty()) sources.push_back(&real);
    std::vector<calibrators::KeyFit> fits;
    auto costs = calibrators::fit_process_costs(sources, first_step, profile.node_cores, &fits);
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
        return Status::invalid_argument("--scale-costs: no cost key starts with '" + prefix +
                                        "' (kinds: generate, train, step, load, swap-in, swap-out)");
      }
    }
    auto check = calibrators::check_flexmarl(real, *costs, cores, first_step);
    if (!check.is_ok()) return check.status().with_context(real.path);
    check->fits = std::move(fits);
    checks.push_back(std::move(*check));
  }
  std::vector<double> errors;
  for (const auto& c : checks)
    errors.push_back(c.error);
  const double m = calibrators::quantile(errors, 0.5);
  if (a.json) {
    nlohmann::ordered_json j;
    j["system"] = "flexmarl";
    j["costs"] = a.costs_from.empty() ? "replay" : "runs";
    j["step_error"] = m;
    j["runs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < checks.size(); ++i) {
      const auto& c = checks[i];
      nlohmann::ordered_json r{{"trace", reals[i].path},
                               {"framework", c.framework},
                               {"workers", c.workers},
                               {"cores", c.cores},
                               {"first_step", c.first_step},
                               {"real_step_s", c.real_step_s},
                               {"twin_step_s", c.twin_step_s},
                               {"step_error", c.error},
                               {"real_cpu_utilization", c.real_cpu_utilization},
                               {"twin_cpu_utilization", c.twin_cpu_utilization},
                               {"controller_s_per_job", c.costs.controller_s_per_job},
                               {"message_latency_s", c.costs.message_latency_s}};
      r["per_key"] = nlohmann::ordered_json::array();
      for (const auto& e : c.per_key) {
        r["per_key"].push_back({{"cost_key", e.cost_key},
                                {"real_jobs", e.real_jobs},
                                {"twin_jobs", e.twin_jobs},
                                {"real_s", e.real_s},
                                {"twin_s", e.twin_s},
                                {"error", e.error}});
      }
      j["runs"].push_back(r);
    }
    CT_RETURN_IF_ERROR(write_output("-", j.dump(2) + "\n"));
  } else {
    for (size_t i = 0; i < checks.size(); ++i) {
      const auto& c = checks[i];
      std::printf("# clustertwin validate flexmarl: %s, %s, %d workers on %d cores, steps %d.. measured\n",
                  reals[i].path.c_str(), c.framework.c_str(), c.workers, c.cores, c.first_step);
      std::printf("  real step %.3f s, twin step %.3f s, error %s; worker CPU utilisation real %.1f%%, twin %.1f%%\n",
                  c.real_step_s, c.twin_step_s, percent(c.error).c_str(), 100 * c.real_cpu_utilization,
                  100 * c.twin_cpu_utilization);
      std::printf("  fitted: controller CPU %.3f ms per job, message latency %.3f ms one way\n",
                  c.costs.controller_s_per_job * 1e3, c.costs.message_latency_s * 1e3);
      std::printf("  %-28s %9s %9s %12s %12s %9s\n", "cost key (wall per job)", "real jobs", "twin jobs", "real ms",
                  "twin ms", "error");
      for (const auto& e : c.per_key) {
        std::printf("  %-28s %9lld %9lld %12.3f %12.3f %9s\n", e.cost_key.c_str(), static_cast<long long>(e.real_jobs),
                    static_cast<long long>(e.twin_jobs), e.real_s * 1e3, e.twin_s * 1e3, percent(e.error).c_str());
      }
    }
    if (!scales.empty()) std::printf("# a what-if: fitted costs scaled by --scale-costs\n");
    if (cores != profile.node_cores) {
      std::printf(
          "# a what-if: the twin on %d cores, the runs on %d (errors compare with a machine they did not "
          "have)\n",
          cores, profile.node_cores);
    }
    std::printf("# %s: %zu run(s), median step-time error %s\n",
                a.costs_from.empty() ? "a replay: costs fitted on each run itself"
                                     : ("a prediction: costs fitted on " + a.costs_from).c_str(),
                checks.size(), percent(m).c_str());
  }
  return check(a, m, "median step-time error");
}

// flowtrain: the process twin (sim/flowtrain/process_twin.h) on each run's mode, ranks and batch, priced by
// --costs-from's runs (or the run itself), on the profile's node cores (or --cores).
Status validate_flowtrain(const ValidateArgs& a, const sim::ClusterProfile& profile) {
  if (profile.node_cores < 1 && a.cores < 1) {
    return Status::invalid_argument("--profile " + a.profile +
                                    ": field 'node_cores' missing: the process twin needs the machine's cores");
  }
  if (a.cores < 0) return Status::invalid_argument("--cores " + std::to_string(a.cores) + ": must be >= 1");
  const int first_step = a.warmup_given ? a.warmup : 1;
  const int fit_cores = profile.node_cores > 0 ? profile.node_cores : a.cores;
  const int cores = a.cores > 0 ? a.cores : fit_cores;
  std::vector<calibrators::FlowTrainRun> reals, others;
  for (const std::string& path : split_commas(a.real)) {
    auto run = calibrators::read_flowtrain_run(path);
    if (!run.is_ok()) return run.status();
    reals.push_back(std::move(*run));
  }
  if (reals.empty()) return Status::invalid_argument("--real: give at least one trace");
  for (const std::string& path : a.costs_from.empty() ? std::vector<std::string>{} : split_commas(a.costs_from)) {
    auto run = calibrators::read_flowtrain_run(path);
    if (!run.is_ok()) return run.status();
    others.push_back(std::move(*run));
  }
  std::vector<calibrators::FlowTrainCheck> checks;
  for (const calibrators::FlowTrainRun& real : reals) {
    std::vector<const calibrators::FlowTrainRun*> sources;
    for (const auto& o : others)
      sources.push_back(&o);
    if (sources.empty()) sources.push_back(&real);
    auto costs = calibrators::fit_flowtrain_costs(sources, first_step, fit_cores);
    if (!costs.is_ok()) return costs.status();
    auto c = calibrators::check_flowtrain(real, *costs, cores, first_step);
    if (!c.is_ok()) return c.status().with_context(real.path);
    checks.push_back(std::move(*c));
  }
  std::vector<double> errors;
  for (const auto& c : checks)
    errors.push_back(c.error);
  const double m = calibrators::quantile(errors, 0.5);
  if (a.json) {
    nlohmann::ordered_json j;
    j["system"] = "flowtrain";
    j["costs"] = a.costs_from.empty() ? "replay" : "runs";
    j["step_error"] = m;
    j["runs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < checks.size(); ++i) {
      const auto& c = checks[i];
      j["runs"].push_back({{"trace", reals[i].path},
                           {"mode", c.mode},
                           {"world_size", c.world},
                           {"encoder_workers", c.encoders},
                           {"cores", c.cores},
                           {"first_step", c.first_step},
                           {"real_step_s", c.real_step_s},
                           {"twin_step_s", c.twin_step_s},
                           {"step_error", c.error},
                           {"real_samples_per_s", c.real_samples_per_s},
                           {"twin_samples_per_s", c.twin_samples_per_s},
                           {"real_mfu", c.real_mfu},
                           {"twin_mfu", c.twin_mfu},
                           {"handoff_latency_s", c.costs.handoff_latency_s},
                           {"exchange_s_per_byte", c.costs.exchange_s_per_byte}});
    }
    CT_RETURN_IF_ERROR(write_output("-", j.dump(2) + "\n"));
  } else {
    std::printf("  %-12s %5s %8s %11s %11s %8s %11s %11s %8s %8s\n", "mode", "ranks", "encoders", "real step",
                "twin step", "error", "real samp/s", "twin samp/s", "real mfu", "twin mfu");
    for (const auto& c : checks) {
      std::printf("  %-12s %5d %8d %10.4fs %10.4fs %8s %11.1f %11.1f %7.2f%% %7.2f%%\n", c.mode.c_str(), c.world,
                  c.encoders, c.real_step_s, c.twin_step_s, percent(c.error).c_str(), c.real_samples_per_s,
                  c.twin_samples_per_s, 100 * c.real_mfu, 100 * c.twin_mfu);
    }
    std::printf("# fitted hand-off latency %.3f ms, all-reduce exchange %.3f ns per byte (last run's costs)\n",
                checks.back().costs.handoff_latency_s * 1e3, checks.back().costs.exchange_s_per_byte * 1e9);
    if (cores != fit_cores) std::printf("# a what-if: the twin on %d cores, the runs on %d\n", cores, fit_cores);
    std::printf("# %s: %zu run(s), median step-time error %s\n",
                a.costs_from.empty() ? "a replay: costs fitted on each run itself"
                                     : ("a prediction: costs fitted on " + a.costs_from).c_str(),
                checks.size(), percent(m).c_str());
  }
  return check(a, m, "median step-time error");
}

void print_run(const ValidateArgs& a, const calibrators::ReplayResult& r, const std::string& profile) {
  std::printf("# clustertwin validate %s: %s, %d workers, runner steps %d..%d measured, profile %s\n", a.system.c_str(),
              r.variant.c_str(), r.workers, r.first_step, r.last_step, profile.c_str());
  std::printf("  real step %.3f ms, twin step %.3f ms, error %s\n", r.real_step_s * 1e3, r.twin_step_s * 1e3,
              percent(r.step_error).c_str());
  std::printf("  %-18s %8s %12s %12s %9s\n", "cost key", "samples", "real ms", "twin ms", "error");
  for (const calibrators::KeyError& e : r.per_key) {
    std::printf("  %-18s %8lld %12.3f %12.3f %9s\n", e.cost_key.c_str(), static_cast<long long>(e.samples),
                e.real_s * 1e3, e.twin_s * 1e3, percent(e.error).c_str());
  }
  if (r.costs == "replay") {
    std::printf("# a replay: the costs are fitted on the run they predict\n");
  } else if (r.costs == "runs") {
    std::printf("# a prediction: the costs are fitted on %s\n", a.costs_from.c_str());
  } else {
    std::printf("# a prediction: the costs are the profile's (%s)\n", a.profile.c_str());
  }
}

Status run_validate(const ValidateArgs& a) {
  if (a.max_error_given && !(a.max_error >= 0)) {
    return Status::invalid_argument("--max-error " + std::to_string(a.max_error) +
                                    ": must be >= 0 (a relative error: 0.05 is 5%)");
  }
  auto profile = sim::load_cluster_profile(a.profile);
  if (!profile.is_ok()) return profile.status();
  if (a.system == "collectives") return validate_collectives(a, *profile);
  if (a.system == "flexmarl") return validate_flexmarl(a, *profile);
  if (a.system == "flowtrain") return validate_flowtrain(a, *profile);
  // Several traces: repetitions of one configuration, judged by their median error.
  std::vector<calibrators::ReplayResult> results;
  for (const std::string& path : split_commas(a.real)) {
    auto run = calibrators::read_recorded_run(path);
    if (!run.is_ok()) return run.status();
    if (run->metadata.system != a.system) {
      return Status::invalid_argument(path + ": field 'metadata.system': '" + run->metadata.system +
                                      "' is not the system asked for ('" + a.system + "')");
    }
    auto r = calibrators::replay(path, a.costs_from.empty() ? std::vector<std::string>{} : split_commas(a.costs_from),
                                 *profile, a.warmup, a.drain);
    if (!r.is_ok()) return r.status();
    results.push_back(std::move(*r));
  }
  if (results.empty()) return Status::invalid_argument("--real: give at least one trace");
  if (results.size() == 1) {
    if (a.json) {
      CT_RETURN_IF_ERROR(write_output("-", calibrators::replay_json(results[0])));
    } else {
      print_run(a, results[0], profile->name);
    }
    return check(a, results[0].step_error, "step-time error");
  }
  std::vector<double> errors, real_ms;
  for (const auto& r : results) {
    errors.push_back(r.step_error);
    real_ms.push_back(r.real_step_s * 1e3);
  }
  const double m = calibrators::quantile(errors, 0.5);
  if (a.json) {
    nlohmann::ordered_json j;
    j["system"] = a.system;
    j["traces"] = results.size();
    j["step_error"] = m;
    j["real_step_ms_median"] = calibrators::quantile(real_ms, 0.5);
    j["runs"] = nlohmann::ordered_json::array();
    for (const auto& r : results)
      j["runs"].push_back(nlohmann::ordered_json::parse(calibrators::replay_json(r)));
    CT_RETURN_IF_ERROR(write_output("-", j.dump(2) + "\n"));
  } else {
    for (const auto& r : results)
      print_run(a, r, profile->name);
    std::printf("# %zu runs: median step-time error %s (real step median %.3f ms)\n", results.size(),
                percent(m).c_str(), calibrators::quantile(real_ms, 0.5));
  }
  return check(a, m, "median step-time error of " + std::to_string(results.size()) + " runs");
}

}  // namespace

void add_validate_command(CLI::App& app, Action* action) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Run the twin on what a recorded real run did and report its error. For nestpipe: the plan the trace "
      "carries on the same worker count, priced by the profile's cost table when it prices every cost key (a "
      "calibrated profile), by --costs-from's runs when given, else by the run itself (a replay); prints the "
      "step-time error and each cost key's. For flexmarl and flowtrain: the process twin, which replays the run's "
      "decisions or step plan on simulated ranks sharing the cores, priced by --costs-from's runs or by the run "
      "itself. For `collectives`: the twin's benchmark at every size of a recorded collective benchmark, against "
      "its mean. Exit code 3 when the error exceeds --max-error");
  cmd->add_option("SYSTEM", a->system,
                  "nestpipe, flexmarl (the process twin: the real controller's decisions on simulated processes "
                  "sharing the profile's node_cores), flowtrain (the process twin: the real executor's step plan on "
                  "simulated ranks sharing the cores), or collectives for a collective benchmark")
      ->required();
  cmd->add_option("--real", a->real,
                  "A trace of `clustertwin run SYSTEM --trace`, or several comma-separated: repetitions of one "
                  "configuration, judged by their median error (collectives: benchmark traces, pooled)")
      ->required();
  cmd->add_option("--profile", a->profile, "Cluster profile: shipped name or YAML (`clustertwin calibrate -o`)")
      ->capture_default_str();
  cmd->add_option("--costs-from", a->costs_from,
                  "Fit the costs on these other recorded runs (comma-separated: other variants, worker counts or "
                  "seeds, pooled) and predict --real's step");
  CLI::Option* max_error =
      cmd->add_option("--max-error", a->max_error,
                      "Exit 3 when the absolute relative step-time error (collectives: the largest per size) exceeds "
                      "this (0.05 = 5%)");
  CLI::Option* warmup = cmd->add_option(
      "--warmup", a->warmup, "Runner steps after the pipeline prologue left out (flexmarl: first steps, default 1)");
  warmup->capture_default_str();
  cmd->add_option("--drain", a->drain, "Runner steps at the end left out")->capture_default_str();
  cmd->add_option("--cores", a->cores,
                  "flexmarl: run the twin on this many cores instead of the profile's node_cores (the machine the "
                  "runs were recorded on, where the costs are fitted): a what-if");
  cmd->add_option("--scale-costs", a->scale_costs,
                  "flexmarl: KIND=FACTOR (repeatable), every fitted flexmarl/KIND/* job cost times FACTOR, e.g. "
                  "generate=5 for a rollout-heavier task: a what-if");
  cmd->add_flag("--json", a->json,
                "Print JSON: step_error (relative, signed), per_key, costs, runs, measured_steps (collectives: "
                "sizes, max_abs_error)");
  cmd->callback([a, action, max_error, warmup] {
    a->max_error_given = max_error->count() > 0;
    a->warmup_given = warmup->count() > 0;
    *action = [a] { return run_validate(*a); };
  });
}

}  // namespace clustertwin::cli
