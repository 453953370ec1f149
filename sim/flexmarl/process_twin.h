#pragma once

// The twin of `run flexmarl` on one machine: the orchestrator the real
// controller runs (models/flexmarl/orchestrator.h) drives simulated worker
// processes instead of real ones. Every process, the controller included,
// runs on one SimGrid host with the machine's cores: C cores time-shared
// among whichever processes are busy, none faster than one core (the real
// run's processes each run one torch thread).
//
//   controller  before each job it posts, its CPU time per job (building the
//               message, reading the reply)
//   messages    each job reaches its worker, and each reply the controller,
//               a fixed latency after it is sent
//   worker      each job takes its cost key's CPU time, a line in the job's
//               size: flexmarl/KIND/AGENT priced by FLOPs (generate, train:
//               the same positions the real worker counts), bytes (load,
//               step: the all-reduced gradient) or a constant (swaps);
//               an all-reduce step starts when all its members are there
//               and adds the exchange's time
//
// Response lengths are what sampling produced, not a timing: a real run's
// trace carries them (config.response_tokens) and they are the same in
// every framework and worker count for one seed and batch, so the twin
// replays them. What it predicts is the schedule: the frameworks' waits,
// overlaps and the cores' contention.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/flexmarl/orchestrator.h"

namespace clustertwin::sim::flexmarl {

/// A job kind's CPU time per agent: latency + seconds_per_unit x size;
/// `mean_size` stands for a size the twin cannot compute (the swaps' state).
struct ProcessKeyCost {
  double latency_s = 0;
  double seconds_per_unit = 0;
  double mean_size = 0;
  /// A step of several members (an all-reduce): once all are there, the
  /// time it takes beyond its CPU (the exchange over loopback), no core held.
  double collective_s = 0;
};

struct ProcessTwinCosts {
  std::map<std::string, ProcessKeyCost> keys;  // "flexmarl/generate/planner", ...
  double controller_s_per_job = 0;
  /// One way, controller to worker or back: Gloo over loopback and the
  /// receiving thread's wake-up, no core held.
  double message_latency_s = 0;
};

struct ProcessTwinSetup {
  models::flexmarl::OrchestratorOptions orchestrator;  // workers: the process count less one
  int steps = 1;
  int cores = 2;
  /// Per step, per agent, by input (in the step) x group + trajectory.
  std::vector<std::array<std::vector<int64_t>, models::flexmarl::kTaskTurns>> response_tokens;
};

/// One job as the twin ran it.
struct ProcessJob {
  int rank = 0;
  int step = 0;  // the controller's step when it ran
  std::string cost_key;
  double start_s = 0, end_s = 0;  // from the run's start; contention included
  double cpu_s = 0;
};

struct ProcessTwinResult {
  std::vector<double> step_s;
  std::vector<double> step_start_s;
  std::vector<ProcessJob> jobs;  // in order of completion
  double worker_cpu_s = 0;       // CPU seconds of the workers' jobs, all steps
  int64_t posted = 0;            // jobs the orchestrator posted
};

/// InvalidArgument naming the field: a missing cost key, too few recorded
/// steps, a recorded step of the wrong batch size, cores < 1.
Status validate(const ProcessTwinSetup& setup, const ProcessTwinCosts& costs);

/// Runs the setup (in a child process: SimGrid keeps global state).
StatusOr<ProcessTwinResult> run_process_twin(const ProcessTwinSetup& setup, const ProcessTwinCosts& costs);

/// The cost key of a job: "flexmarl/generate/planner".
std::string process_cost_key(models::flexmarl::JobKind kind, int agent);

}  // namespace clustertwin::sim::flexmarl
