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

#include "models/flexmarl/math_task.h"
#include "models/flexmarl/orchestrator.h"
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

  /// Runs every step and stops the workers. Internal when the experience
  /// store catches a version violation (the workers are stopped first).
  StatusOr<ControllerReport> run();

  Status post(const clustertwin::models::flexmarl::Job& job) override;

 private:
  // What the rollout engine returned besides the response, per sample.
  struct SampleTensors {
    at::Tensor logp, topk_ids, topk_logp;
  };

  Status run_step(int step);
  Status handle(int rank, Message& m);
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
};

}  // namespace clustertwin::real::flexmarl
