#pragma once

// The arguments of `clustertwin run flowtrain` (cli/flowtrain/run.cpp parses
// them), apart from the command (flowtrain_command.h) so that the checks
// (flowtrain_args.h), the workers and the report read them without
// including the command that drives them. No torch here.

#include <cstdint>
#include <string>

namespace clustertwin::real::flowtrain {

/// One rank's options; a check names the member that is wrong
/// ("global_batch 0: must be >= 1"), the command line maps it to its flag.
struct FlowTrainRunArgs {
  std::string mode = "flowtrain";  // monolithic | disagg-sync | flowtrain
  int steps = 3;
  int global_batch = 16;           // samples per step
  int encoder_workers = 0;         // split modes: ranks [0, E); 0: a quarter of the ranks, at least 1
  int64_t micro_batch_tokens = 0;  // backbone tokens per packed micro-batch; 0: the model's context
  int pool_slots = 16;             // flowtrain: embedding slots (the run-ahead bound)
  double lr = 0.05;                // SGD with momentum 0.9
  std::string model = "tiny";      // the VLM's preset (tiny_vlm_options.h): tiny | large
  int width = 1;                   // tiny only: its widths (d_vision, d_model and their MLPs) times this
  // The parameters' and the compute's dtype: fp32 | bf16; empty: the preset's (fp32 for tiny, bf16 for large).
  // The pool between the sides, the image tokens' gradients and the loss stay float32 either way.
  std::string dtype;
  uint64_t seed = 0;
  std::string trace;
  std::string dump_params;     // DIR: the final parameters, DIR/rank-0.bin (float64)
  std::string dump_state;      // DIR: each rank's final training state, DIR/rank-R.bin (Worker::state_dump)
  std::string checkpoint_dir;  // checkpoints go to DIR/step-NNNNNN (real/core/checkpoint.h)
  int checkpoint_every = 0;    // steps between checkpoints; 0: none
  bool resume = false;         // start from checkpoint_dir's newest complete checkpoint
  bool json = false;
  int threads = 1;
  double timeout_s = 120;
  std::string device = "auto";         // cpu | cuda | auto (cuda when this build has CUDA and a GPU is visible)
  std::string backend = "auto";        // auto | gloo | nccl (communicator.h)
  std::string pool_transfer = "auto";  // flowtrain mode: auto (cuda-ipc on a GPU where it works) | host | cuda-ipc
};

}  // namespace clustertwin::real::flowtrain
