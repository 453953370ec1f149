// clustertwin validate flexmarl: its entry in common/systems.def.

#include "cli/validate.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "calibrators/flexmarl/process_fit.h"
#include "cli/command.h"
#include "common/statistics.h"
#include "common/text.h"

namespace clustertwin::cli {

namespace {

// --scale-costs KIND=FACTOR: every flexmarl/KIND/* cost times FACTOR; as (cost key prefix, factor).
StatusOr<std::vector<std::pair<std::string, double>>> parse_scale_costs(const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, double>> scales;
  for (const std::string& spec : specs) {
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
  return scales;
}

nlohmann::ordered_json run_json(const calibrators::FlexMarlCheck& c) {
  nlohmann::ordered_json r{{"trace", c.trace},
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
  return r;
}

void print_run(const calibrators::FlexMarlCheck& c) {
  std::printf("# clustertwin validate flexmarl: %s, %s, %d workers on %d cores, steps %d.. measured\n", c.trace.c_str(),
              c.framework.c_str(), c.workers, c.cores, c.first_step);
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

// flexmarl: the process twin (sim/flexmarl/process_twin.h) on each run's
// framework, worker count and response lengths, priced by --costs-from's
// runs (or the run itself), on the profile's node cores; `scale_costs`: --scale-costs.
Status validate_flexmarl_runs(const ValidateArgs& a, const std::vector<std::string>& scale_costs,
                              const cluster::ClusterProfile& profile) {
  if (profile.cpu_cores() < 1) {
    return Status::invalid_argument("--profile " + a.profile +
                                    ": field 'node_cores' (or 'host.cores') missing: the process twin needs the "
                                    "machine's cores");
  }
  const int first_step = a.warmup_given ? a.warmup : 1;
  if (a.cores < 0) return Status::invalid_argument("--cores " + std::to_string(a.cores) + ": must be >= 1");
  const int cores = a.cores > 0 ? a.cores : profile.cpu_cores();
  auto scales = parse_scale_costs(scale_costs);
  if (!scales.is_ok()) return scales.status();
  auto result = calibrators::check_flexmarl_runs(split_commas(a.real), costs_from_paths(a), first_step,
                                                 profile.cpu_cores(), cores, *scales);
  if (!result.is_ok()) return result.status();
  const auto& checks = *result;
  const double m = median_error(checks);
  if (a.json) {
    nlohmann::ordered_json j = process_twin_json(a, "flexmarl", m);
    for (const auto& c : checks)
      j["runs"].push_back(run_json(c));
    CT_RETURN_IF_ERROR(write_output("-", j.dump(2) + "\n"));
  } else {
    for (const auto& c : checks)
      print_run(c);
    if (!scales->empty()) std::printf("# a what-if: fitted costs scaled by --scale-costs\n");
    if (cores != profile.cpu_cores()) {
      std::printf(
          "# a what-if: the twin on %d cores, the runs on %d (errors compare with a machine they did not "
          "have)\n",
          cores, profile.cpu_cores());
    }
    std::printf("# %s: %zu run(s), median step-time error %s\n",
                a.costs_from.empty() ? "a replay: costs fitted on each run itself"
                                     : ("a prediction: costs fitted on " + a.costs_from).c_str(),
                checks.size(), percent(m).c_str());
  }
  return check(a, m, "median step-time error");
}

class FlexMarlValidation final : public SystemValidation {
 public:
  std::string help() const override {
    return "flexmarl (the process twin: the real controller's decisions on simulated processes sharing the "
           "profile's node_cores)";
  }
  bool takes_cores() const override { return true; }
  void add_options(CLI::App& validate) override {
    validate.add_option("--scale-costs", scale_costs_,
                        "flexmarl: KIND=FACTOR (repeatable), every fitted flexmarl/KIND/* job cost times FACTOR, "
                        "e.g. generate=5 for a rollout-heavier task: a what-if");
  }
  Status validate(const ValidateArgs& a, const cluster::ClusterProfile& profile) const override {
    return validate_flexmarl_runs(a, scale_costs_, profile);
  }

 private:
  std::vector<std::string> scale_costs_;
};

}  // namespace

std::unique_ptr<SystemValidation> make_flexmarl_validation() {
  return std::make_unique<FlexMarlValidation>();
}

}  // namespace clustertwin::cli
