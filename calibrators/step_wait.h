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
// profiles'): per cost key, the time its collectives spent off the calling
// thread's CPU once all members had arrived (TaskSample::met_s less cpu_s:
// their wait for each other is the twin's to simulate), per latency step,
// written as the key's `step_wait` (cluster::CostModel) and held at other
// rank counts; the key keeps the rest, CPU work the twin time-shares, and the
// shared-core fit then scales the whole key, wait included, until the twin
// reproduces the runs (so a replay on the fitted profile is exact). Per key,
// not per op: a run's all-to-alls wait differently (the shipped 2-rank dbp
// runs: its key exchange 1.61 ms a latency step, its embedding All2Alls 0.97
// and 1.08), and a wait pooled over them outlasts some keys' whole time,
// which then stay too long (the 2-rank runs replayed +4.7% on the profile
// fitted on them, the mean over 28 recording x variant pairs).
// From benchmarks (`--step-waits benchmarks`): each rank count's smallest
// message's time per latency step, per op; a benchmark's ranks wait only for
// each other, so it grows faster with the ranks (a 4 KiB all-to-all's 0.23 ->
// 0.74 ms from 2 to 4) than a run's collectives do, and overshoots.
// traces/data/README.md has each one's what-if errors on held-out recordings.

#include <map>
#include <vector>

#include "calibrators/network_fit.h"
#include "calibrators/task_fit.h"
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

/// Per cost key of the runs' collective `samples` (task_samples of recorded
/// runs): the time per latency step their calling threads spent off the CPU
/// once every member was there, sum over samples of (met_s, else seconds,
/// less cpu_s, at least 0) over the sum of their latency steps: what a
/// collective of the run itself waited for the operating system to run its
/// threads. Samples without a CPU time (cpu_s) or latency steps (a group of
/// one) are left out; a key none of whose samples has one gets no wait.
std::map<std::string, double> measure_run_key_waits(const std::vector<TaskSample>& samples);

/// The default where ranks share cores (calibrate's --step-waits auto, and
/// validate --costs-from): when `profile` has node_cores and no step wait
/// yet, adds the runs' own (measure_run_key_waits of `samples`) as its cost
/// keys' step_wait. Returns whether it added any.
bool add_run_step_waits_by_default(const std::vector<TaskSample>& samples, cluster::ClusterProfile* profile);

/// `profile` with `waits` as the step_wait of those cost keys (adding a key where none is).
void add_key_waits(const std::map<std::string, double>& waits, cluster::ClusterProfile* profile);

/// Whether any collective or cost key of `profile` has a step_wait.
bool has_step_waits(const cluster::ClusterProfile& profile);

/// `profile` with `waits` as its collectives' step_wait (adding an entry
/// per collective where none is).
void add_step_waits(const std::map<models::CollectiveOp, std::map<int, double>>& waits,
                    cluster::ClusterProfile* profile);

/// Takes each collective sample's wait out of its time (a profile without
/// node_cores or step waits changes nothing): latency_steps x its cost key's
/// step_wait, else x its op's step_wait at the ranks its run placed on a node
/// of `profile` (its world, at most devices_per_node), never below 0,
/// recorded in TaskSample::wait_s.
void remove_step_waits(const cluster::ClusterProfile& profile, std::vector<TaskSample>* samples);

}  // namespace clustertwin::calibrators
