#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {

/// The first-level switch group (pod) of each of the profile's nodes: its
/// leaf switch (a dragonfly's router), 0 for every node of a single switch.
/// The grouping the platform builder uses (nodes_per_leaf consecutive nodes).
std::vector<int> pod_of_nodes(const cluster::ClusterProfile& profile);

/// The nodes of every job, in job order: a job's rank r runs on node
/// nodes[r / devices_per_node]. A job with an explicit node list keeps it
/// (in its order); the others take whole free nodes by `policy`, in job
/// order:
///
///   packed  the lowest free nodes: fills a pod before the next
///   spread  round-robin across pods, one node of each in turn (from the
///           pod after the last one taken), so a job spans as many pods as it can
///   random  free nodes shuffled with `seed` (the same seed, the same placement)
///
/// and lists them ascending (ranks follow node order, as a batch scheduler
/// hands them out). The mix must have passed check_mix. InvalidArgument for
/// an unknown policy.
StatusOr<std::vector<std::vector<int>>> place_jobs(const MixSpec& mix, const cluster::ClusterProfile& profile,
                                                   const std::string& policy, uint64_t seed);

}  // namespace clustertwin::sim::mix
