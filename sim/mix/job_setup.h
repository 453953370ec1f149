#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/simulator.h"
#include "sim/flowtrain/flowtrain_job.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {

/// Everything one job of a mix needs to run in an engine: its plan, its
/// profile (the cluster's, with device types and slowdowns renumbered by
/// the job's own nodes and ranks, plus costs its kind adds), its options,
/// and its tasks priced; or, for a flowtrain job, FlowTrain's twin prepared
/// (its actors instead of a plan; options say its workers and steps).
struct JobSetup {
  std::string name;
  std::string runs;  // for the report: "data_parallel", "plan FILE", "nestpipe/VARIANT", "flowtrain/MODE"
  std::vector<int> nodes;
  std::optional<flowtrain::FlowTrainJob> flowtrain;  // set: the job runs FlowTrain's actors, not `plan`
  models::Plan plan;
  cluster::ClusterProfile profile;
  SimOptions options;
  std::vector<std::vector<double>> seconds;  // sim/core/plan_run.h price_plan
  int stride = 1;                            // symmetric mode: devices_per_node
};

/// The plan of a data_parallel job: per step, `compute_s` of compute (the
/// cost key "mix_compute", which the job's profile prices) on stream
/// "compute", then a ring all-reduce of `allreduce_bytes` over all workers
/// on stream "comm"; the next step's compute waits for the all-reduce.
models::Plan data_parallel_plan(int64_t allreduce_bytes);

/// `profile` as job `nodes` sees it: node i of the job is node nodes[i] of
/// the cluster, rank r device r % d of it (d = min(workers, devices per node)).
cluster::ClusterProfile job_profile(const cluster::ClusterProfile& profile, const std::vector<int>& nodes, int workers);

/// Builds and prices `job` on `nodes`. InvalidArgument names the mix file and the job's field.
StatusOr<JobSetup> make_job_setup(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile,
                                  const std::vector<int>& nodes, uint64_t seed);

}  // namespace clustertwin::sim::mix
