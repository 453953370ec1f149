// clustertwin validate: run the twin on what a recorded real run (or
// collective benchmark) did and report its error (calibrators/replay.h,
// calibrators/network_fit.h); exit 3 when it exceeds --max-error. Each
// system's own check is in cli/SYSTEM/validate.cpp.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "calibrators/network_fit.h"
#include "calibrators/replay.h"
#include "cli/command.h"
#include "cli/validate.h"
#include "common/statistics.h"
#include "common/text.h"

namespace clustertwin::cli {

std::string percent(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.2f%%", 100 * x);
  return text;
}

Status check(const ValidateArgs& a, double error, const std::string& what) {
  if (!a.max_error_given || std::abs(error) <= a.max_error) return Status::ok();
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g%%", 100 * a.max_error);
  return Status::check_failed(a.real + ": " + what + " " + percent(error) + " exceeds --max-error " + limit);
}

std::vector<std::string> costs_from_paths(const ValidateArgs& a) {
  return a.costs_from.empty() ? std::vector<std::string>{} : split_commas(a.costs_from);
}

nlohmann::ordered_json process_twin_json(const ValidateArgs& a, const std::string& system, double step_error) {
  nlohmann::ordered_json j;
  j["system"] = system;
  j["costs"] = a.costs_from.empty() ? "replay" : "runs";
  j["step_error"] = step_error;
  j["runs"] = nlohmann::ordered_json::array();
  return j;
}

namespace {

Status validate_collectives(const ValidateArgs& a, const cluster::ClusterProfile& profile) {
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

void print_run(const ValidateArgs& a, const calibrators::ReplayResult& r, const std::string& profile) {
  std::printf("# clustertwin validate %s: %s, %d workers, runner steps %d..%d measured, profile %s\n", a.system.c_str(),
              r.variant.c_str(), r.workers, r.first_step, r.last_step, profile.c_str());
  std::printf("  real step %.3f ms, twin step %.3f ms, error %s\n", r.real_step_s * 1e3, r.twin_step_s * 1e3,
              percent(r.step_error).c_str());
  std::printf("  %-18s %8s %12s %12s %9s %9s\n", "cost key", "samples", "real ms", "twin ms", "error", "real CPU");
  for (const calibrators::KeyError& e : r.per_key) {
    const std::string cpu = e.real_cpu_share >= 0 ? format_number("%.0f%%", 100 * e.real_cpu_share) : "-";
    std::printf("  %-18s %8lld %12.3f %12.3f %9s %9s\n", e.cost_key.c_str(), static_cast<long long>(e.samples),
                e.real_s * 1e3, e.twin_s * 1e3, percent(e.error).c_str(), cpu.c_str());
  }
  std::printf("# real CPU: the recording thread's CPU time over the tasks' own time (the rest is waiting)\n");
  if (r.costs == "replay") {
    std::printf("# a replay: the costs are fitted on the run they predict\n");
  } else if (r.costs == "runs") {
    std::printf("# a prediction: the costs are fitted on %s\n", a.costs_from.c_str());
  } else {
    std::printf("# a prediction: the costs are the profile's (%s)\n", a.profile.c_str());
  }
}

// The registry's systems' sides of the command, and the options each added.
struct ValidateCommand {
  ValidateArgs args;
  std::vector<std::pair<std::string, std::unique_ptr<SystemValidation>>> systems;
  std::vector<std::pair<CLI::Option*, std::string>> system_options;  // an option and the system that added it
};

// Refuses an option that the chosen system does not take: another system's own, or --cores for a twin that does
// not run on the machine's cores.
Status check_system_options(const ValidateCommand& c, const SystemValidation* chosen) {
  const ValidateArgs& a = c.args;
  for (const auto& [option, owner] : c.system_options) {
    if (option->count() > 0 && owner != a.system) {
      return Status::invalid_argument(option->get_name() + ": an option of validate " + owner + ", not of validate " +
                                      a.system);
    }
  }
  if (a.cores_given && (chosen == nullptr || !chosen->takes_cores())) {
    std::string takers;
    for (const auto& [name, system] : c.systems) {
      if (system->takes_cores()) takers += (takers.empty() ? "" : ", ") + name;
    }
    return Status::invalid_argument("--cores " + std::to_string(a.cores) + ": validate " + a.system +
                                    " runs no twin on the machine's cores (those that do: " + takers + ")");
  }
  return Status::ok();
}

Status run_validate(const ValidateCommand& c) {
  const ValidateArgs& a = c.args;
  if (a.max_error_given && !(a.max_error >= 0)) {
    return Status::invalid_argument("--max-error " + std::to_string(a.max_error) +
                                    ": must be >= 0 (a relative error: 0.05 is 5%)");
  }
  const SystemValidation* chosen = nullptr;
  for (const auto& [name, system] : c.systems) {
    if (name == a.system) chosen = system.get();
  }
  CT_RETURN_IF_ERROR(check_system_options(c, chosen));
  auto profile = cluster::load_cluster_profile(a.profile);
  if (!profile.is_ok()) return profile.status();
  if (a.system == "collectives") return validate_collectives(a, *profile);
  if (chosen != nullptr) return chosen->validate(a, *profile);
  // Another system's recorded plan run (trace derive-plan's): replayed as a plan.
  return validate_replay(a, *profile);
}

}  // namespace

// A recorded plan run (NestPipe's, or trace derive-plan's): the plan its trace
// carries, priced by the profile, --costs-from's runs or the run itself.
Status validate_replay(const ValidateArgs& a, const cluster::ClusterProfile& profile) {
  // Several traces: repetitions of one configuration, judged by their median error.
  std::vector<calibrators::ReplayResult> results;
  for (const std::string& path : split_commas(a.real)) {
    auto run = calibrators::read_recorded_run(path);
    if (!run.is_ok()) return run.status();
    if (run->metadata.system != a.system) {
      return Status::invalid_argument(path + ": field 'metadata.system': '" + run->metadata.system +
                                      "' is not the system asked for ('" + a.system + "')");
    }
    auto r = calibrators::replay(path, costs_from_paths(a), profile, a.warmup, a.drain);
    if (!r.is_ok()) return r.status();
    results.push_back(std::move(*r));
  }
  if (results.empty()) return Status::invalid_argument("--real: give at least one trace");
  if (results.size() == 1) {
    if (a.json) {
      CT_RETURN_IF_ERROR(write_output("-", calibrators::replay_json(results[0])));
    } else {
      print_run(a, results[0], profile.name);
    }
    return check(a, results[0].step_error, "step-time error");
  }
  std::vector<double> errors, real_ms;
  double real_sum = 0, twin_sum = 0;
  for (const auto& r : results) {
    errors.push_back(r.step_error);
    real_ms.push_back(r.real_step_s * 1e3);
    real_sum += r.real_step_s;
    twin_sum += r.twin_step_s;
  }
  const double m = quantile(errors, 0.5);
  // The repetitions pooled: the twin's mean step against the runs' mean step (one configuration's runs give one
  // twin step when the profile prices them: then it is judged against their mean, not the median run's noise).
  const double pooled = real_sum > 0 ? twin_sum / real_sum - 1 : 0;
  if (a.json) {
    nlohmann::ordered_json j;
    j["system"] = a.system;
    j["traces"] = results.size();
    j["step_error"] = m;
    j["real_step_ms_median"] = quantile(real_ms, 0.5);
    j["pooled_step_error"] = pooled;
    j["runs"] = nlohmann::ordered_json::array();
    for (const auto& r : results)
      j["runs"].push_back(nlohmann::ordered_json::parse(calibrators::replay_json(r)));
    CT_RETURN_IF_ERROR(write_output("-", j.dump(2) + "\n"));
  } else {
    for (const auto& r : results)
      print_run(a, r, profile.name);
    std::printf(
        "# %zu runs: median step-time error %s (real step median %.3f ms); pooled %s (the twin's mean step "
        "against the runs' mean)\n",
        results.size(), percent(m).c_str(), quantile(real_ms, 0.5), percent(pooled).c_str());
  }
  return check(a, m, "median step-time error of " + std::to_string(results.size()) + " runs");
}

// Each system's options on `cmd`, each remembered with the system that takes it.
void add_system_options(CLI::App* cmd, ValidateCommand* c) {
  for (const auto& [name, system] : c->systems) {
    const size_t before = cmd->get_options().size();
    system->add_options(*cmd);
    const std::vector<CLI::Option*> options = cmd->get_options();
    for (size_t i = before; i < options.size(); ++i)
      c->system_options.emplace_back(options[i], name);
  }
}

// run_validate, its errors in the flags' words: the calibrators name their parameters; validate's flags set them.
Status run_validate_in_flag_words(const ValidateCommand& c) {
  return in_flag_words(run_validate(c), {{"reals", "--real"},
                                         {"first_step", "--warmup"},
                                         {"warmup", "--warmup"},
                                         {"drain", "--drain"},
                                         {"scales", "--scale-costs"}});
}

void add_validate_command(CLI::App& app, Action* action) {
  auto c = std::make_shared<ValidateCommand>();
  ValidateArgs* a = &c->args;
#define CT_SYSTEM(name, title) c->systems.emplace_back(#name, make_##name##_validation());
#include "common/systems.def"
#undef CT_SYSTEM
  std::string systems_help;
  for (const auto& [name, system] : c->systems)
    systems_help += system->help() + ", ";
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Run the twin on what a recorded real run did and report its error: each system's twin on its runs (see "
      "SYSTEM), priced by --costs-from's runs when given, else by the run itself (a replay), or by a calibrated "
      "profile's cost table; a recorded plan run of any other system (trace derive-plan's) replays its plan. For "
      "`collectives`: the twin's benchmark at every size of a recorded collective benchmark, against its mean. "
      "Exit code 3 when the error exceeds --max-error");
  cmd->add_option("SYSTEM", a->system,
                  systems_help + "collectives for a collective benchmark, or another system's recorded plan run")
      ->required();
  cmd->add_option("--real", a->real,
                  "A trace of `clustertwin run SYSTEM --trace`, or several comma-separated: repetitions of one "
                  "configuration, judged by their median error (collectives: benchmark traces, pooled)")
      ->required();
  cmd->add_option("--profile", a->profile, "Cluster profile: shipped name or YAML (`clustertwin calibrate -o`)")
      ->capture_default_str();
  cmd->add_option("--costs-from", a->costs_from,
                  "Fit the costs on these other recorded runs (comma-separated: other variants, worker counts or "
                  "seeds, pooled) and predict --real's step (a plan run on a profile whose ranks share cores: the "
                  "runs' collectives' waits apart from their CPU work, as `calibrate --step-waits auto`)");
  CLI::Option* max_error =
      cmd->add_option("--max-error", a->max_error,
                      "Exit 3 when the absolute relative step-time error (collectives: the largest per size) exceeds "
                      "this (0.05 = 5%)");
  CLI::Option* warmup =
      cmd->add_option("--warmup", a->warmup,
                      "Runner steps after the pipeline prologue left out (a process twin: first steps, default 1)");
  warmup->capture_default_str();
  cmd->add_option("--drain", a->drain, "Runner steps at the end left out")->capture_default_str();
  CLI::Option* cores = cmd->add_option(
      "--cores", a->cores,
      "A twin that runs on the machine's cores: run it on this many cores instead of the profile's node_cores (the "
      "machine the runs were recorded on, where the costs are fitted): a what-if");
  cmd->add_flag("--json", a->json,
                "Print JSON: step_error (relative, signed), per_key, costs, runs, measured_steps (collectives: "
                "sizes, max_abs_error)");
  add_system_options(cmd, c.get());
  cmd->callback([c, a, action, max_error, warmup, cores] {
    a->max_error_given = max_error->count() > 0;
    a->warmup_given = warmup->count() > 0;
    a->cores_given = cores->count() > 0;
    *action = [c] { return run_validate_in_flag_words(*c); };
  });
}

}  // namespace clustertwin::cli
