#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {

/// A job's checkpointing: every `interval_s` seconds of work it writes a
/// checkpoint that takes `cost_s`; after a failure it pays `restart_s`
/// (a failure during the restart starts it over) and redoes the work since
/// its last checkpoint.
struct CheckpointPolicy {
  double interval_s = 0;
  double cost_s = 0;
  double restart_s = 0;
};

/// One timeline of a job under failures, over `horizon_s` of wall-clock time.
struct ResilienceResult {
  double interval_s = 0;
  double useful_s = 0;                // work saved by a checkpoint
  double lost_s = 0;                  // work and checkpoint time a failure threw away
  double checkpoint_s = 0;            // time in checkpoints that completed
  double restart_s = 0;               // time in restarts
  double pending_s = 0;               // at the horizon: work since the last checkpoint, neither saved nor lost
  int failures = 0;                   // failures that hit the job
  double goodput_steps_per_hour = 0;  // useful_s / step time / horizon in hours
  double useful_fraction = 0;         // useful_s / horizon_s
};

/// The failure times (seconds, ascending, before `horizon_s`) of `node`:
/// exponential inter-arrival times of mean `node_mtbf_s`, drawn from a
/// generator seeded by (`seed`, `node`) alone, so that a node fails at the
/// same times whatever job sits on it and whatever interval is tried.
std::vector<double> node_failures(uint64_t seed, int node, double node_mtbf_s, double horizon_s);

/// Runs a job's timeline: work in segments of policy.interval_s each
/// followed by a checkpoint, `failures` (seconds, ascending: every failure
/// of any of the job's nodes) interrupting it. Deterministic.
ResilienceResult run_timeline(const CheckpointPolicy& policy, const std::vector<double>& failures, double horizon_s,
                              double step_s);

/// Daly's expected wall time to finish one segment of `interval_s` work
/// and its checkpoint under exponential failures of mean `mtbf_s` with
/// restart `restart_s` (Daly 2006, eq. 13 with the restart repeated on a
/// failure): M e^(R/M) (e^((tau + C)/M) - 1). The useful fraction at tau
/// is tau / that.
double daly_segment_time(const CheckpointPolicy& policy, double mtbf_s);

/// Young's optimum interval sqrt(2 C M) (Young 1974).
double young_interval(double cost_s, double mtbf_s);

/// A job's timelines for each checkpoint interval it asks for, and with
/// node MTBFs the interval Young's formula gives, on the same failures.
struct JobResilience {
  double mtbf_s = 0;                   // the job's: node MTBF / its nodes (0 when failures are listed)
  double young_interval_s = 0;         // sqrt(2 C M) (0 when failures are listed)
  std::vector<ResilienceResult> rows;  // the job's intervals in file order, then Young's
  std::vector<double> daly_fraction;   // per row, Daly's expected useful fraction (0 when failures are listed)
  size_t best = 0;                     // the row with the highest goodput (the first of equals)
  bool young_row = false;              // whether the last row is Young's interval
};

/// The failure timelines of `job` (which has a checkpoint policy) on
/// `nodes` under `failures`, seeded by `seed`, with steps of `step_s`.
JobResilience job_resilience(const JobSpec& job, const FailureSpec& failures, const std::vector<int>& nodes,
                             uint64_t seed, double step_s);

}  // namespace clustertwin::sim::mix
