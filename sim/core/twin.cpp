#include "sim/core/twin.h"

#include <chrono>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"

namespace clustertwin::sim {

std::string JobFrame::where(std::string_view key) const {
  return file + ": field '" + field + "." + std::string(key) + "': ";
}

std::string JobFrame::job() const {
  return file + ": " + field + " ('" + name + "')";
}

SimOptions JobFrame::apply(SimOptions options) const {
  options.workers = workers;
  options.seed = seed;
  if (steps > 0) options.steps = steps;
  if (warmup >= 0) options.warmup_steps = warmup;
  if (drain >= 0) options.drain_steps = drain;
  if (shared_fabric) options.collective_shortcut = false;
  return options;
}

Status JobFrame::check_first_step_warms_up(cluster::FieldReader& entry, std::string_view system) const {
  if (warmup < 0 && drain < 0) return Status::ok();
  return entry.error(warmup >= 0 ? "warmup" : "drain", "a " + std::string(system) +
                                                           " job warms up with its first step and has no drain: give "
                                                           "only steps (>= 2)");
}

SimOptions JobFrame::first_step_warmup_options(int steps) const {
  SimOptions options;
  options.workers = workers;
  options.seed = seed;
  options.steps = steps;
  options.warmup_steps = 1;
  options.drain_steps = 0;
  return options;
}

StatusOr<SimResult> run_alone(const TwinJob& job, const cluster::ClusterProfile& profile) {
  const auto wall_start = std::chrono::steady_clock::now();
  const int workers = job.options().workers;
  auto payload = run_isolated([&]() -> StatusOr<std::string> {
    TwinEngine twin(workers <= kStackGuardMaxWorkers);
    auto platform = Platform::build(profile, workers);
    if (!platform.is_ok()) return platform.status();
    std::unique_ptr<TwinRun> run = job.run_on(**platform);
    run->start();
    twin.engine().run();
    CT_RETURN_IF_ERROR(run->check_complete());
    return sim_result_to_json(run->result());
  });
  if (!payload.is_ok()) return payload.status();
  auto result = sim_result_from_json(*payload);
  if (!result.is_ok()) return result.status();
  result->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace clustertwin::sim
