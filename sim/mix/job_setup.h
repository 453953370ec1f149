#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/twin.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {

/// Everything one job of a mix needs to run in an engine: its nodes, its
/// profile (the cluster's, with device types and slowdowns renumbered by
/// the job's own nodes and ranks), and its twin's job prepared on it
/// (sim/core/twin.h: a step plan priced, or a system's own actors ready to
/// start). `job->runs()` says what it runs, for the report: "data_parallel",
/// "plan FILE", "nestpipe/VARIANT", "flowtrain/MODE", "flexmarl/FRAMEWORK".
struct JobSetup {
  std::string name;
  std::vector<int> nodes;
  cluster::ClusterProfile profile;
  std::unique_ptr<TwinJob> job;
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
