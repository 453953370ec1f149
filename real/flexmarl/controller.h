#pragma once

// The controller of `run flexmarl` (rank 0): the orchestrator's decisions
// (the experience store, the load balancer, the frameworks' schedules) run
// as messages to the worker processes; it keeps the published weights and
// the host copies of swapped-out trainer state, all in host memory (whatever
// the workers' device: the controller is the host side of the system).

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/state_dump.h"
#include "models/flexmarl/math_task.h"
#include "models/flexmarl/orchestrator.h"
#include "real/core/checkpointing.h"
#include "real/core/communicator.h"
#include "real/core/tracer.h"
#include "real/flexmarl/messages.h"
#include "real/flexmarl/worker.h"

namespace clustertwin::real::flexmarl {

using clustertwin::models::flexmarl::Framework;
using clustertwin::models::flexmarl::separates_trainers;

struct ControllerOptions {
  clustertwin::models::flexmarl::OrchestratorOptions orchestrator;  // workers: the world size less one
  int steps = 1;
  int topk = 4;
  AdamOptions adam;
  sis::LossOptions loss;
  int checkpoint_every = 0;     // steps between checkpoints; 0: none
  CheckpointWriter checkpoint;  // this rank's part of one (with every worker's, which kCheckpoint asks for)
  KillHooks hooks;              // tests: this rank dies at a step's start
};

struct StepReport {
  double seconds = 0;
  double controller_cpu_s = 0;  // the controller's own CPU time in the step
  int64_t jobs = 0;             // jobs posted in the step
  int64_t generated_tokens = 0;
  std::array<double, clustertwin::models::flexmarl::kTaskTurns> mean_reward{};
  /// Response tokens per agent, by input (in the step) x group + trajectory.
  std::array<std::vector<int64_t>, clustertwin::models::flexmarl::kTaskTurns> response_tokens;
};

struct ControllerReport {
  std::vector<StepReport> steps;
  int workers = 0;
  double worker_cpu_s = 0;   // CPU seconds in jobs (without waiting for a core), summed over workers
  double worker_busy_s = 0;  // wall seconds in jobs (device work included), summed over workers
  double swap_s = 0;         // wall seconds in swap-in and swap-out jobs, summed over workers
  int64_t swap_bytes = 0;    // trainer state moved by them
  int64_t swaps = 0, reassignments = 0, migrations = 0, weight_loads = 0;
  std::vector<at::Tensor> weights;    // the final published weights, per agent
  std::vector<at::Tensor> gradients;  // the gradient of each agent's last step
};

/// Rank 0 of `run flexmarl`: the orchestrator (models/flexmarl/
/// orchestrator.h) decides; this turns its jobs into messages with their
/// tensors (weights, trainer state, prompts, log-probabilities) and the
/// workers' replies back into completions.
class Controller : public clustertwin::models::flexmarl::JobSink {
 public:
  Controller(Communicator& comm, const Links& links, Tracer& tracer, ControllerOptions options);

  /// Runs every step (from the restored one after restore()) and stops the
  /// workers. Internal when the experience store catches a version
  /// violation (the workers are stopped first).
  StatusOr<ControllerReport> run();

  /// Instead of the initial placement: the state in `dump` (a checkpoint's
  /// rank 0 file `file`: state_dump() with the results so far), from which
  /// run() goes on at step `next_step`. InvalidArgument naming the file and
  /// the tensor or field that does not fit this run.
  Status restore(const StateDump& dump, const std::string& file, int64_t next_step);
  /// The controller's state between steps (after run(), for --dump-state):
  /// per agent "NAME.weights" (published), "NAME.gradient" (the last step's),
  /// "NAME.host_state" (the host copy of its trainer state), and the
  /// schedule's carry ("schedule.*").
  StatusOr<StateDump> state_dump() const;

  Status post(const clustertwin::models::flexmarl::Job& job) override;

 private:
  // What the rollout engine returned besides the response, per sample.
  struct SampleTensors {
    at::Tensor logp, topk_ids, topk_logp;
  };

  Status create();  // the orchestrator and every agent's fresh policy and trainer state
  Status run_step(int step);
  Status handle(int rank, Message& m);
  /// Handles replies until no job is in flight: the step boundary a checkpoint needs.
  Status drain();
  /// After `steps_done` steps: every worker and this rank write their parts.
  Status write_checkpoint(int64_t steps_done);
  /// The report's steps so far, as "results.*" tensors, and back.
  void add_results(StateDump& dump) const;
  Status restore_results(const StateDump& dump, const std::string& file, int64_t steps);
  Status stop_workers(bool abort, ControllerReport* report);

  Communicator& comm_;
  const Links& links_;
  Tracer& tracer_;
  ControllerOptions o_;
  Outbox outbox_;
  std::optional<clustertwin::models::flexmarl::Orchestrator> orchestrator_;
  static constexpr int kAgents = clustertwin::models::flexmarl::kTaskTurns;

  std::vector<at::Tensor> weights_, gradients_, host_state_;  // per agent
  std::vector<SampleTensors> tensors_;                        // per sample of the step
  ControllerReport report_;
  int64_t first_step_ = 0;  // restore()'s
};

}  // namespace clustertwin::real::flexmarl
