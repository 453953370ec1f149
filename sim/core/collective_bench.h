#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/collective_runner.h"

namespace clustertwin::sim {

/// What `clustertwin sim collective` measures, as nccl-tests reports it.
struct CollectiveBenchOptions {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  models::Algorithm algorithm = models::Algorithm::kAuto;
  std::vector<int64_t> sizes;  // bytes, nccl-tests convention (see models/plan/plan.h)
  int workers = 2;
  Fidelity fidelity = Fidelity::kFlow;
};

struct CollectiveBenchRow {
  int64_t bytes = 0;
  double time_s = 0;      // from the last rank's arrival to the collective's end
  double algbw_gbps = 0;  // bytes / time, GB = 1e9 bytes
  double busbw_gbps = 0;  // algbw x the operation's bus factor
};

/// Simulates the collective at each size, one after the other on every
/// worker (one simulation, one task per size).
StatusOr<std::vector<CollectiveBenchRow>> bench_collective(const CollectiveBenchOptions& options,
                                                           const cluster::ClusterProfile& profile);

/// The plan that bench_collective runs: one stream, one task per size.
models::Plan collective_bench_plan(const CollectiveBenchOptions& options);

}  // namespace clustertwin::sim
