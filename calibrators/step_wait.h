#pragma once

// A collective's wait per latency step on shared cores (cluster::
// CollectiveFactor::step_wait): measured from the recorded runs' own
// collectives or from collective benchmarks, and taken out of the recorded
// collectives before their cost keys are fitted.
//
// Why: where ranks share a machine's cores (localhost-cpu), a Gloo collective
// of small messages spends most of its time waiting (for its members, and
// for the operating system to run its threads, once per message step), not
// copying: the calling threads of the recorded collectives are on a core
// 3-35% of their time. A cost key fitted on a 2-rank run alone holds that
// wait as CPU work priced per bus byte, so at 4 ranks the twin scales it by
// the bus bytes (x1.5) and time-shares it with the compute on the two cores
// (x2), while the runs show a time per latency step that barely moves from 2
// to 4 ranks (nestpipe, 100-step recordings: all-reduce 1.37 -> 1.5-1.8 ms, the
// embedding all-to-alls 1.6-1.7 -> 1.7-2.1 ms) and compute that waits far
// less for a core than the twin's (a collective's threads sleep).
//
// From the runs (`calibrate --step-waits runs`: calibrate's default on a
// base whose ranks share cores, validate --costs-from's, the shipped what-if
// profiles'): per op, the collectives' time off the calling thread's CPU
// (cpu_us) per latency step, at the runs' rank count and held at others
// (CollectiveFactor::step_wait_at); the key keeps the rest (its CPU time and
// its own departure from the op's mean wait), which the twin time-shares.
// From benchmarks (`--step-waits benchmarks`): each rank count's smallest
// message's time per latency step; a benchmark's ranks wait only for each
// other, so it grows faster with the ranks (a 4 KiB all-to-all's 0.23 ->
// 0.74 ms from 2 to 4) than a run's collectives do, and overshoots.
// traces/data/README.md has each one's what-if errors.

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

/// Per collective and ranks on a node (the run's world, at most
/// `ranks_per_node` when that is > 0: the count the twin looks the wait up
/// by) of the runs' collective `samples` (task_samples of recorded runs):
/// the time per latency step that the calling thread spent off the CPU, sum
/// over samples of (time - CPU time) over the sum of their latency steps.
/// What a collective of the run itself waited, among the step's other tasks
/// and streams, for its members and for the operating system to run its
/// threads. Samples without a CPU time (cpu_s) are left out; an op none of
/// whose samples has one gets no wait.
std::map<models::CollectiveOp, std::map<int, double>> measure_run_step_waits(const std::vector<TaskSample>& samples,
                                                                             int ranks_per_node);

/// The default where ranks share cores (calibrate's --step-waits auto, and
/// validate --costs-from): when `profile` has node_cores and no step wait
/// yet, adds the runs' own (measure_run_step_waits of `samples`). Returns
/// whether it added any.
bool add_run_step_waits_by_default(const std::vector<TaskSample>& samples, cluster::ClusterProfile* profile);

/// Whether any collective of `profile` has a step_wait.
bool has_step_waits(const cluster::ClusterProfile& profile);

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
