#pragma once

// The shared-core fit: on a machine whose ranks share cores, each key's cost
// is fitted by simulating the recorded runs until the twin gives every key
// the time the runs recorded.

#include <vector>

#include "calibrators/recorded_run.h"
#include "common/status.h"
#include "models/cluster/cluster_profile.h"

namespace clustertwin::calibrators {

/// A recorded run and the runner steps of it that count.
struct MeasuredRun {
  const RecordedRun* run = nullptr;
  int first_step = 0, last_step = 0;
};

/// On a profile whose nodes' ranks share cores (node_cores > 0) a key's cost
/// is core-seconds, not the time a task took, which includes its wait for a
/// core. Starting from `profile`'s costs, scales each cost key's cost by
/// real / twin until the twin, running each run's plan on its own worker
/// count and the profile's cores, gives every key the mean time (ready to
/// end) the runs recorded: an inverse fit by simulation, a few rounds, each
/// distinct (variant, worker count) simulated once per round. Keys the
/// profile does not price are left alone.
StatusOr<cluster::ClusterProfile> fit_shared_cores(const std::vector<MeasuredRun>& runs,
                                                   cluster::ClusterProfile profile);

}  // namespace clustertwin::calibrators
