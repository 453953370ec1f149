// clustertwin validate: replay a recorded real run in the twin and report the
// step-time error (calibrators/replay.h).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "calibrators/replay.h"
#include "cli/command.h"
#include "models/common/text.h"
#include "sim/core/cluster_profile.h"

namespace clustertwin::cli {
namespace {

struct ValidateArgs {
  std::string system;
  std::string real;
  std::string profile = "localhost-cpu";
  std::string costs_from;
  int warmup = 3;
  int drain = 2;
  bool json = false;
};

Status run_validate(const ValidateArgs& a) {
  auto run = calibrators::read_recorded_run(a.real);
  if (!run.is_ok()) return run.status();
  if (run->metadata.system != a.system) {
    return Status::invalid_argument(a.real + ": field 'metadata.system': '" + run->metadata.system +
                                    "' is not the system asked for ('" + a.system + "')");
  }
  auto profile = sim::load_cluster_profile(a.profile);
  if (!profile.is_ok()) return profile.status();
  auto r = calibrators::replay(a.real, a.costs_from.empty() ? std::vector<std::string>{} : split_commas(a.costs_from),
                               *profile, a.warmup, a.drain);
  if (!r.is_ok()) return r.status();
  if (a.json) return write_output("-", calibrators::replay_json(*r));
  std::printf("# clustertwin validate %s: %s, %d workers, runner steps %d..%d measured, profile %s\n", a.system.c_str(),
              r->variant.c_str(), r->workers, r->first_step, r->last_step, profile->name.c_str());
  std::printf("  real step %.3f ms, twin step %.3f ms, error %+.1f%%\n", r->real_step_s * 1e3, r->twin_step_s * 1e3,
              100 * r->step_error);
  std::printf("  %-16s %8s %10s %10s %10s\n", "cost key", "samples", "mean ms", "median ms", "IQR ms");
  for (const calibrators::KeyFit& f : r->fits) {
    std::printf("  %-16s %8lld %10.3f %10.3f %10.3f\n", f.cost_key.c_str(), static_cast<long long>(f.samples),
                f.mean_s * 1e3, f.median_s * 1e3, f.spread_s * 1e3);
  }
  if (r->costs_from.empty()) {
    std::printf("# a replay: the costs are fitted on the run they predict\n");
  } else {
    std::printf("# a prediction: the costs are fitted on %s\n", a.costs_from.c_str());
  }
  return Status::ok();
}

}  // namespace

void add_validate_command(CLI::App& app, Action* action) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Replay a recorded real run in the twin: fit each cost key's duration from the trace (mean over the "
      "measured steps, from ready to end; a collective averaged over its members), run the plan the "
      "trace "
      "carries on the same worker count, and report the twin's step-time error against the run's");
  cmd->add_option("SYSTEM", a->system, "The system the trace recorded (nestpipe)")->required();
  cmd->add_option("--real", a->real, "A trace of `clustertwin run SYSTEM --trace`")->required();
  cmd->add_option("--costs-from", a->costs_from,
                  "Fit the costs on these other recorded runs (comma-separated: other variants or seeds, pooled) and "
                  "predict --real's step");
  cmd->add_option("--profile", a->profile, "Cluster profile the costs are added to")->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Runner steps after the pipeline prologue left out")->capture_default_str();
  cmd->add_option("--drain", a->drain, "Runner steps at the end left out")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print JSON: step_error (relative, signed), per_key, measured_steps");
  cmd->callback([a, action] { *action = [a] { return run_validate(*a); }; });
}

}  // namespace clustertwin::cli
