#pragma once

// Validating the process twin (sim/flexmarl/process_twin.h) against real
// `run flexmarl` runs: read a run's trace, fit every job kind's CPU time per
// agent from the workers' events (cpu_us against the FLOPs or bytes each
// event carries), the controller's CPU per job from its step events, run the
// twin on the run's framework, worker count and recorded response lengths,
// and compare step times.

#include <array>
#include <string>
#include <vector>

#include "calibrators/replay.h"
#include "common/status.h"
#include "sim/flexmarl/process_twin.h"
#include "traces/event.h"

namespace clustertwin::calibrators {

/// A `run flexmarl --trace` run: its options and what it recorded.
struct FlexMarlRun {
  std::string path;
  traces::Metadata metadata;
  std::vector<traces::Event> events;
  sim::flexmarl::ProcessTwinSetup setup;  // the run's framework, workers, batch, seed, steps and response lengths
};

/// InvalidArgument naming the file and field for a trace that is not of
/// `run flexmarl`, lacks the options or config.response_tokens, or ran a
/// task other than the small one (config.task: the twin knows no other).
StatusOr<FlexMarlRun> read_flexmarl_run(const std::string& path);

/// The runs' worker jobs from step `first_step` on, pooled (a key only the
/// warm-up ran, from the warm-up):
///   - each cost key's CPU time as a line in its size (fit_keys);
///   - an all-reduce step's exchange: the median over its instances of the
///     time from its last member's start to its end, less its CPU;
///   - the controller's CPU per posted job (its step events' cpu_us over the
///     jobs of those steps);
///   - the message latency, the one parameter fitted by simulation: the one
///     (bisection in [0, 50 ms]) that gives the runs' total measured step
///     time when the twin runs each on `cores` cores.
StatusOr<sim::flexmarl::ProcessTwinCosts> fit_process_costs(const std::vector<const FlexMarlRun*>& runs, int first_step,
                                                            int cores, std::vector<KeyFit>* fits = nullptr);

struct FlexMarlCheck {
  std::string trace;  // the recorded run's path
  std::string framework;
  int workers = 0;
  int cores = 0;
  int first_step = 0;               // steps before it are warm-up, left out on both sides
  double real_step_s = 0;           // median over the measured steps
  double twin_step_s = 0;           // median over the same steps
  double error = 0;                 // (twin - real) / real
  double real_cpu_utilization = 0;  // worker CPU seconds / (workers x step), the measured steps
  double twin_cpu_utilization = 0;
  /// Per cost key over the measured steps: the jobs each ran and the mean
  /// wall time per job (contention included), real against twin.
  struct Key {
    std::string cost_key;
    int64_t real_jobs = 0, twin_jobs = 0;
    double real_s = 0, twin_s = 0;
    double error = 0;  // (twin - real) / real
  };
  std::vector<Key> per_key;
  std::vector<KeyFit> fits;
  sim::flexmarl::ProcessTwinCosts costs;
};

/// Runs the twin on `run` with `costs` on `cores` cores and compares.
StatusOr<FlexMarlCheck> check_flexmarl(const FlexMarlRun& run, const sim::flexmarl::ProcessTwinCosts& costs, int cores,
                                       int first_step);

/// `clustertwin validate flexmarl`: each run of `reals` (trace paths) against
/// the twin on `cores` cores, its costs fitted (on `fit_cores`, the machine
/// they were recorded on) on `costs_from`'s runs pooled, or on the run
/// itself when `costs_from` is empty. `scales`: what-ifs, (cost-key prefix,
/// factor) multiplying every fitted key with that prefix. InvalidArgument
/// for no trace, a trace that is not a FlexMARL run, or a prefix that
/// matches no key.
StatusOr<std::vector<FlexMarlCheck>> check_flexmarl_runs(const std::vector<std::string>& reals,
                                                         const std::vector<std::string>& costs_from, int first_step,
                                                         int fit_cores, int cores,
                                                         const std::vector<std::pair<std::string, double>>& scales);

}  // namespace clustertwin::calibrators
