#pragma once

// A collective's wait per latency step on shared cores (cluster::
// CollectiveFactor::step_wait): measured by a collective benchmark at each
// rank count, and taken out of the recorded collectives before their cost
// keys are fitted.
//
// Why: where ranks share a machine's cores (localhost-cpu), a collective of
// small messages spends most of its time waiting for the operating system to
// run its threads, one wake-up per message step, not copying: the recorded
// collectives' threads are on a core 4-14% of their time. That wait grows
// with the ranks on the machine (measured on the 2-core machine of
// traces/data: a 4 KiB all-reduce's time per latency step 0.57 ms at 2
// ranks, 0.91 ms at 4; an all-to-all's 0.23 and 0.74 ms), which a run at 2
// ranks cannot show. A cost key fitted on that run alone puts the wait in its
// rate and scales it by the bus bytes (x1.5 from 2 to 4 ranks), where it
// grows with the steps and the wake-up (x3.6 for an all-to-all). With the
// wait measured apart, the key holds the rest (the collective's CPU work and
// its contention with the step's other tasks), which scales as before.
//
// Opt-in (calibrate --step-waits): on three recordings of one day it moved
// the 2->4-rank what-if from 10-25% too fast to within 8% on one, and from
// within 15% to 7-32% too slow on the two others (traces/data/README.md). The
// benchmark's own ranks compete for the cores, so its wait may already hold
// part of the contention that the twin adds again by time-sharing.

#include <map>
#include <vector>

#include "calibrators/network_fit.h"
#include "calibrators/replay.h"
#include "models/cluster/cluster_profile.h"

namespace clustertwin::calibrators {

/// Per collective and rank count of the benchmark `samples`: the time per
/// latency step of its smallest message, the nearest to no bytes at all, as
/// a network fit (fit_network with `options`) of that rank count alone
/// prices it: the line of its size segment, which its neighbouring sizes
/// steady (a size's own mean on a shared machine moves by tens of percent
/// between repetitions).
std::map<models::CollectiveOp, std::map<int, double>> measure_step_waits(const std::vector<CollectiveSample>& samples,
                                                                         const NetworkFitOptions& options);

/// `profile` with `waits` as its collectives' step_wait (adding an entry
/// per collective where none is).
void add_step_waits(const std::map<models::CollectiveOp, std::map<int, double>>& waits,
                    cluster::ClusterProfile* profile);

/// Takes each collective sample's wait out of its time (a profile without
/// node_cores or step waits changes nothing): latency_steps x step_wait at
/// the ranks its run placed on a node of `profile` (its world, at most
/// devices_per_node), never below 0, recorded in TaskSample::wait_s.
void remove_step_waits(const cluster::ClusterProfile& profile, std::vector<TaskSample>* samples);

}  // namespace clustertwin::calibrators
