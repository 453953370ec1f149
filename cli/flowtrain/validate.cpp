// clustertwin validate flowtrain: its entry in common/systems.def.

#include "cli/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "calibrators/flowtrain/flowtrain_fit.h"
#include "cli/command.h"
#include "common/statistics.h"
#include "common/text.h"

namespace clustertwin::cli {

namespace {

// flowtrain: the process twin (sim/flowtrain/process_twin.h) on each run's mode, ranks and batch, priced by
// --costs-from's runs (or the run itself), on the profile's node cores (or --cores).
Status validate_flowtrain_runs(const ValidateArgs& a, const cluster::ClusterProfile& profile) {
  if (profile.cpu_cores() < 1 && a.cores < 1) {
    return Status::invalid_argument("--profile " + a.profile +
                                    ": field 'node_cores' (or 'host.cores') missing: the process twin needs the "
                                    "machine's cores");
  }
  if (a.cores < 0) return Status::invalid_argument("--cores " + std::to_string(a.cores) + ": must be >= 1");
  const int first_step = a.warmup_given ? a.warmup : 1;
  const int fit_cores = profile.cpu_cores() > 0 ? profile.cpu_cores() : a.cores;
  const int cores = a.cores > 0 ? a.cores : fit_cores;
  auto result =
      calibrators::check_flowtrain_runs(split_commas(a.real), costs_from_paths(a), first_step, fit_cores, cores);
  if (!result.is_ok()) return result.status();
  const auto& checks = *result;
  const double m = median_error(checks);
  if (a.json) {
    nlohmann::ordered_json j = process_twin_json(a, "flowtrain", m);
    for (const auto& c : checks) {
      j["runs"].push_back({{"trace", c.trace},
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
                           {"exchange_s_per_byte", c.costs.exchange_s_per_byte},
                           {"assumed", c.notes}});
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
    for (const std::string& n : checks.back().notes)
      std::printf("# assumed: %s\n", n.c_str());
    if (cores != fit_cores) std::printf("# a what-if: the twin on %d cores, the runs on %d\n", cores, fit_cores);
    std::printf("# %s: %zu run(s), median step-time error %s\n",
                a.costs_from.empty() ? "a replay: costs fitted on each run itself"
                                     : ("a prediction: costs fitted on " + a.costs_from).c_str(),
                checks.size(), percent(m).c_str());
  }
  return check(a, m, "median step-time error");
}

class FlowTrainValidation final : public SystemValidation {
 public:
  std::string help() const override {
    return "flowtrain (the process twin: the real executor's step plan on simulated ranks sharing the cores)";
  }
  bool takes_cores() const override { return true; }
  Status validate(const ValidateArgs& a, const cluster::ClusterProfile& profile) const override {
    return validate_flowtrain_runs(a, profile);
  }
};

}  // namespace

std::unique_ptr<SystemValidation> make_flowtrain_validation() {
  return std::make_unique<FlowTrainValidation>();
}

}  // namespace clustertwin::cli
