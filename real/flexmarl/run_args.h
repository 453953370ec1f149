#pragma once

// The arguments of `clustertwin run flexmarl` (cli/flexmarl/run.cpp parses
// them), apart from the command (flexmarl_command.h) so that its parts
// (run_checkpoints.h) read them without including the command that drives
// them. No torch here.

#include <cstdint>
#include <string>

namespace clustertwin::real::flexmarl {

/// One rank's options; a check names the member that is wrong ("load_gap 0:
/// must be > 0 ..."), the command line maps it to its flag.
struct FlexMarlArgs {
  std::string framework = "flexmarl";
  /// The task's size (models/flexmarl/math_task.h): "small" (the shipped traces', the process twin's) or
  /// "large" (policies and budgets for a GPU, where generation dominates a step).
  std::string task = "small";
  int steps = 3;
  int queries = 4;           // inputs per step
  int group = 4;             // trajectories per input: GRPO's group
  int micro_batch = 4;       // samples per micro-batch
  int rollout_batch = 8;     // requests per rollout job at most (the engine's static batch)
  int trainers = 0;          // marti, flexmarl: trainer workers (0: a quarter of the workers, at least 1)
  double load_gap = 2;       // flexmarl: the balancer's load-gap threshold (requests)
  std::string loss = "ppo";  // ppo | dapo | gspo
  bool sis = false;
  double lr = 1e-3;
  uint64_t seed = 0;
  std::string trace;
  std::string dump_params;  // DIR: the final weights and last gradients, DIR/rank-0.bin
  /// DIR: each rank's final state, DIR/rank-R.bin: the controller's published weights, last gradients, host
  /// copies of the trainer state and the schedule's carry; a worker's loaded weights and resident trainers.
  std::string dump_state;
  std::string checkpoint_dir;  // checkpoints go to DIR/step-NNNNNN (real/core/checkpoint.h)
  int checkpoint_every = 0;    // steps between checkpoints; 0: none
  bool resume = false;         // start from checkpoint_dir's newest complete checkpoint
  bool json = false;
  int threads = 1;
  double timeout_s = 120;
  bool fault_late_publish = false;  // tests: worker 1 ignores the first weight publish
  /// Where the workers' policies, KV caches, trainers and optimizer state live: "cpu", "cuda" or "auto"
  /// (real/core/device.h). The controller keeps its copies in host memory whatever this says.
  std::string device = "auto";
  /// The data groups' backend (weights, gradients, trainer state): "gloo", "nccl" or "auto". The controller's
  /// messages always go over Gloo (messages.h).
  std::string backend = "auto";
  /// Large payloads (weights, trainer state): "shm" through shared memory, "gloo" through the data process
  /// groups (whatever their backend), "auto" shm when every rank is on this machine.
  std::string transport = "auto";
};

}  // namespace clustertwin::real::flexmarl
