#pragma once

// A step plan as a twin's job (sim/core/twin.h): the plan's streams as
// `sim plan` runs them, on any platform or placed view of one. NestPipe's
// twin and a mix's data_parallel and plan jobs are plans.

#include <memory>
#include <string>
#include <vector>

#include "models/plan/plan.h"
#include "sim/core/twin.h"

namespace clustertwin::sim {

class PlanJob : public TwinJob {
 public:
  /// Prices `plan`'s tasks on `profile` (price_plan) and decides whether it
  /// runs symmetric (one rank a node); InvalidArgument as price_plan, for a
  /// task the profile cannot price. `runs` is what the job runs, for tables.
  static StatusOr<std::unique_ptr<PlanJob>> make(models::Plan plan, cluster::ClusterProfile profile, SimOptions options,
                                                 std::string runs);

  std::string runs() const override { return runs_; }
  const SimOptions& options() const override { return options_; }
  std::unique_ptr<TwinRun> run_on(Platform& view) const override;

  const models::Plan& plan() const { return plan_; }
  /// The profile it is priced on (the job's, with the costs its system adds).
  const cluster::ClusterProfile& profile() const { return profile_; }

 private:
  PlanJob() = default;
  models::Plan plan_;
  cluster::ClusterProfile profile_;
  SimOptions options_;
  std::string runs_;
  std::vector<std::vector<double>> seconds_;  // price_plan's
  int stride_ = 1;                            // symmetric mode: devices_per_node
};

}  // namespace clustertwin::sim
