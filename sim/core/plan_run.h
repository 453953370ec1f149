#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/plan_price.h"  // price_plan, symmetric_world, resolve_fidelity: what a run is started with
#include "sim/core/sim_options.h"
#include "sim/core/sim_result.h"
#include "traces/event.h"

namespace clustertwin::sim {

class Platform;
class PlanRunImpl;  // plan_run_impl.h: the run's state and its actors

/// One plan's streams as SimGrid actors on a platform, in the current
/// engine. Several runs may share one engine and one platform's links (a
/// job mix gives each its own Platform::place view): a run only touches the
/// hosts its platform maps its ranks to, and its own collectives.
///
///   PlanRun run(plan, platform, options, fidelity, seconds, stride);
///   run.start();           // creates the actors
///   engine.run();          // the caller runs the engine
///   run.check_complete();  // Internal when the plan deadlocked
///   SimResult r = run.result(profile);
///
/// `plan`, `platform` and `options` must outlive the run.
class PlanRun {
 public:
  /// `seconds` from price_plan; `stride` 1 simulates every rank,
  /// devices_per_node each node's first (symmetric mode).
  PlanRun(const models::Plan& plan, Platform& platform, const SimOptions& options, Fidelity fidelity,
          std::vector<std::vector<double>> seconds, int stride);
  ~PlanRun();
  PlanRun(const PlanRun&) = delete;
  PlanRun& operator=(const PlanRun&) = delete;

  /// Creates the actors of every simulated rank's streams.
  void start();
  /// Internal naming the count of task runs not done when the engine stopped (a deadlock in the plan).
  Status check_complete() const;
  /// The metrics of the finished run (wall_s left 0): step times, compute,
  /// communication, streams, tasks, MFU and the breakdown, with `profile`
  /// giving the devices' peaks.
  SimResult result(const cluster::ClusterProfile& profile) const;
  /// The events of the run, in the order they ended.
  std::vector<traces::Event>& events();

 private:
  std::unique_ptr<PlanRunImpl> impl_;
};

/// Writes the events of a finished run as a trace (sorted by rank, stream
/// and start, so that the same run gives the same bytes).
Status write_run_trace(const models::Plan& plan, const cluster::ClusterProfile& profile, const SimOptions& options,
                       const SimResult& result, std::vector<traces::Event> events, const std::string& path);

}  // namespace clustertwin::sim
