#include "sim/flowtrain/flowtrain_twin.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>

#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "sim/flowtrain/flowtrain_job.h"
#include "sim/flowtrain/flowtrain_model.h"

namespace sg = simgrid::s4u;

namespace clustertwin::sim::flowtrain {
namespace {

// One run in the child process run_isolated made: the platform of the first setup.workers devices, one job on it.
StatusOr<std::string> run_in_child(const FlowTrainJob& job, const cluster::ClusterProfile& profile) {
  TwinEngine twin;
  auto platform = Platform::build(profile, job.setup().workers);
  if (!platform.is_ok()) return platform.status();
  std::unique_ptr<FlowTrainActors> run = job.start(**platform);
  twin.engine().run();
  CT_RETURN_IF_ERROR(run->status());
  return detail::row_to_json(run->row(), true).dump();
}

}  // namespace

StatusOr<FlowTrainRow> run_flowtrain(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                     FlowTrainMode mode) {
  const auto wall_start = std::chrono::steady_clock::now();
  auto job = FlowTrainJob::prepare(setup, profile, mode);
  if (!job.is_ok()) return job.status();
  auto payload = run_isolated([&] { return run_in_child(*job, profile); });
  if (!payload.is_ok()) return payload.status();
  FlowTrainRow row = detail::row_from_json(nlohmann::json::parse(*payload));
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return row;
}

StatusOr<std::vector<FlowTrainRow>> run_flowtrain_modes(
    const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, const std::vector<FlowTrainMode>& modes,
    const std::vector<int>& workers, const std::function<void(const FlowTrainRow&, int, int)>& progress) {
  std::vector<FlowTrainRow> rows;
  const int total = static_cast<int>(modes.size() * workers.size());
  for (int n : workers) {
    FlowTrainSetup s = setup;
    s.workers = n;
    const size_t first = rows.size();
    for (FlowTrainMode m : modes) {
      auto row = run_flowtrain(s, profile, m);
      if (!row.is_ok()) return row.status();
      rows.push_back(std::move(*row));
      if (progress) progress(rows.back(), static_cast<int>(rows.size()), total);
    }
    const FlowTrainRow* mono = nullptr;
    for (size_t i = first; i < rows.size(); ++i) {
      if (rows[i].mode == "monolithic") mono = &rows[i];
    }
    if (mono != nullptr) {
      const double base = mono->samples_per_s;
      for (size_t i = first; i < rows.size(); ++i)
        rows[i].speedup = rows[i].samples_per_s / base;
    }
  }
  return rows;
}

}  // namespace clustertwin::sim::flowtrain
