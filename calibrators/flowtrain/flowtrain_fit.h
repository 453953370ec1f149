#pragma once

// Validating the FlowTrain process twin (sim/flowtrain/process_twin.h)
// against real `run flowtrain` runs: read a run's trace, fit each cost key's
// CPU time as a line in its size (model FLOPs or bytes) from the ranks'
// events, the all-reduce's exchange, and the one parameter fitted by
// simulation, the hand-off latency (bisection, so that the twin gives the
// fitting runs' total measured step time); then run the twin on another
// run's mode and compare step times.

#include <string>
#include <vector>

#include "common/status.h"
#include "sim/flowtrain/process_twin.h"
#include "traces/event.h"

namespace clustertwin::calibrators {

/// The cost key of a FlowTrain run's step events (rank 0's, one a step).
inline constexpr const char* kFlowTrainStepKey = "flowtrain/step";

/// A `run flowtrain --trace` run: its options and what it recorded.
struct FlowTrainRun {
  std::string path;
  traces::Metadata metadata;
  std::vector<traces::Event> events;
  sim::flowtrain::FlowTrainProcessSetup setup;  // the run's mode, ranks, batch, seed, steps and model facts
  std::vector<double> step_s;                   // rank 0's flowtrain/step events
  double matmul_flops_per_s = 0;                // the run's measured matmul rate (its MFU's peak per rank)
};

/// InvalidArgument naming the file and field for a trace that is not of
/// `run flowtrain` or lacks its options (flowtrain_run.cpp).
StatusOr<FlowTrainRun> read_flowtrain_run(const std::string& path);

/// The costs of `runs`' events from step `first_step` on, pooled; the
/// hand-off latency fitted on `cores` cores. What the runs could not measure
/// and was assumed instead (a hand-off key or latency that monolithic runs
/// lack) is said in `notes`, one line each, when given.
StatusOr<sim::flowtrain::FlowTrainProcessCosts> fit_flowtrain_costs(const std::vector<const FlowTrainRun*>& runs,
                                                                    int first_step, int cores,
                                                                    std::vector<std::string>* notes = nullptr);

struct FlowTrainCheck {
  std::string trace;  // the recorded run's path
  std::string mode;
  int world = 0, encoders = 0, cores = 0, first_step = 0;
  double real_step_s = 0, twin_step_s = 0;  // medians over the measured steps
  double error = 0;                         // (twin - real) / real
  double real_samples_per_s = 0, twin_samples_per_s = 0;
  double real_mfu = 0, twin_mfu = 0;  // against the run's measured matmul rate (0 when the trace lacks it)
  sim::flowtrain::FlowTrainProcessCosts costs;
  std::vector<std::string> notes;  // what the costs assume (fit_flowtrain_costs)
};

/// Runs the twin on `run`'s setup with `costs` on `cores` cores and compares.
StatusOr<FlowTrainCheck> check_flowtrain(const FlowTrainRun& run, const sim::flowtrain::FlowTrainProcessCosts& costs,
                                         int cores, int first_step);

/// `clustertwin validate flowtrain`: each run of `reals` (trace paths)
/// against the twin on `cores` cores, its costs fitted (on `fit_cores`) on
/// `costs_from`'s runs pooled, or on the run itself when `costs_from` is
/// empty. InvalidArgument for no trace or a trace that is not a FlowTrain run.
StatusOr<std::vector<FlowTrainCheck>> check_flowtrain_runs(const std::vector<std::string>& reals,
                                                           const std::vector<std::string>& costs_from, int first_step,
                                                           int fit_cores, int cores);

}  // namespace clustertwin::calibrators
