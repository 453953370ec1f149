#pragma once

// A worker of `run flexmarl` (ranks 1..W): a loop that runs whatever job the
// controller sends (real/flexmarl/messages.h) and answers. It holds, per
// agent, an inference copy of the policy at the version the controller last
// loaded, and the trainer state of the agents swapped in, all on its device:
//
//   load       published weights -> the engine's parameters     (host -> device when they came through host memory)
//   generate   the rollout engine on the device; tokens drawn on the host (rollout.h); results to the host
//   train      the micro-batch to the device; forward and backward there
//   step       gradients all-reduced over the trainers' data group; Adam on the device; the publish to the host
//   swap-in    trainer state host -> device, unpacked                       (pinned memory on a GPU)
//   swap-out   trainer state packed, device -> host                         (pinned memory on a GPU)
//
// A job's trace event spans its device work too: on a GPU the worker waits
// for the device before it reads the job's end time.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "common/state_dump.h"
#include "models/flexmarl/math_task.h"
#include "real/core/checkpointing.h"
#include "real/core/communicator.h"
#include "real/core/tracer.h"
#include "real/flexmarl/grpo_trainer.h"
#include "real/flexmarl/messages.h"
#include "real/flexmarl/rollout.h"

namespace clustertwin::real::flexmarl {

/// The three agents' model shapes (planner, solver, checker) at the task's
/// size: GPTs of different sizes over the task's 16 tokens, in float64 so
/// that runs that batch differently agree to ~1e-15.
ByteLmOptions task_model_options(const clustertwin::models::flexmarl::TaskSpec& task, int agent);
/// A fresh policy of `agent`, seeded (every rank builds the same one: the
/// parameters are drawn on the CPU, then moved to `device`).
StatusOr<ByteLm> make_task_model(const clustertwin::models::flexmarl::TaskSpec& task, int agent, uint64_t seed,
                                 at::Device device = at::kCPU);

/// Writes this rank's part of the checkpoint after `steps_done` steps (the
/// rank file, then the manifest on rank 0): collective over the control
/// group, so every rank calls it for the same step.
using CheckpointWriter = std::function<Status(int64_t steps_done, const StateDump& state)>;

struct WorkerOptions {
  clustertwin::models::flexmarl::TaskSpec task = clustertwin::models::flexmarl::small_task();  // the run's
  AdamOptions adam;
  sis::LossOptions loss;
  RolloutOptions rollout;
  uint64_t seed = 0;
  bool fault_late_publish = false;  // worker 1 keeps older weights at its first load of a version >= 1 (tests)
  CheckpointWriter checkpoint;      // kCheckpoint's
  KillHooks hooks;                  // tests: this rank dies at its first job of a step
};

/// What a worker's jobs took, for the controller's report (the kStopped reply).
struct WorkerTotals {
  double cpu_s = 0;        // the jobs' CPU time (without waiting for a core)
  double busy_s = 0;       // the jobs' wall time, device work included
  double swap_s = 0;       // wall time in swap-in and swap-out jobs: the state's copies between host and device
  int64_t swap_bytes = 0;  // trainer state swapped in and out
};

class Worker {
 public:
  /// The worker's tensors live on `links.device`.
  Worker(Communicator& comm, const Links& links, Tracer& tracer, WorkerOptions options)
      : comm_(comm), links_(links), tracer_(tracer), options_(std::move(options)) {}

  /// Runs jobs until kStop.
  Status run();
  /// The controller stopped the run on an error: no trace to gather.
  bool aborted() const { return aborted_; }

  /// What this worker holds between steps: per agent "NAME.loaded_version"
  /// and "NAME.loaded_weights" (its rollout engine's policy), and
  /// "NAME.trainer_state" (AgentTrainer::pack_state) when a trainer of the
  /// agent is resident here. Host copies.
  StateDump state_dump() const;
  /// Puts a state_dump() (from `file`) back, before run(). InvalidArgument
  /// naming the file and the tensor when it does not fit the task's models.
  Status restore(const StateDump& dump, const std::string& file);

 private:
  Status generate(const Message& m, Message* reply);
  Status train(const Message& m, Message* reply);
  Status step(const Message& m, Message* reply);
  Status swap_in(const Message& m);
  Status swap_out(const Message& m, Message* reply);
  Status load(const Message& m);

  at::Device device() const { return links_.device; }

  Communicator& comm_;
  const Links& links_;
  Tracer& tracer_;
  WorkerOptions options_;
  struct Inference {
    ByteLm model{nullptr};
    int64_t version = -1;
  };
  std::map<int64_t, Inference> inference_;
  std::map<int64_t, std::unique_ptr<AgentTrainer>> trainers_;
  bool faulted_ = false;
  bool aborted_ = false;
  WorkerTotals totals_;  // the kStopped reply
  // The current job's cost drivers, for its trace event.
  double job_flops_ = 0;
  int64_t job_bytes_ = 0;
};

}  // namespace clustertwin::real::flexmarl
