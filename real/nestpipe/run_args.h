#pragma once

// The arguments of `clustertwin run nestpipe` (cli/nestpipe/run.cpp parses
// them), apart from the command (nestpipe_command.h) so that its parts
// (run_checkpoints.h) read them without including the command that drives
// them. No torch here.

#include <cstdint>
#include <string>

namespace clustertwin::real::nestpipe {

/// The arguments of `clustertwin run nestpipe` (see cli/real_command.cpp).
struct NestPipeArgs {
  std::string variant = "nestpipe";
  int steps = 20;
  int micro_batches = 4;
  int batch = 64;  // per worker
  std::string model = "dlrm-small";
  std::string optimizer = "sgd";        // embeddings: sgd | adagrad (row-wise)
  std::string dense_optimizer = "sgd";  // sgd | adam
  double lr = 0.05;                     // embeddings
  double dense_lr = 0.05;
  double zipf = 1.05;
  double overlap = 0.3;
  int64_t vocab = 100000;
  std::string criteo;
  bool no_patch = false;
  bool strict = false;
  uint64_t seed = 0;
  std::string trace;
  std::string dump_state;
  bool json = false;
  bool no_check_order = false;
  int threads = 1;
  double timeout_s = 60;
  std::string device = "auto";  // cpu | cuda | auto (real/core/device.h)
  std::string backend = "auto";
  std::string store = "host";  // the embedding store: host (pinned on a GPU) | device
  std::string checkpoint_dir;  // checkpoints go to DIR/step-NNNNNN (real/nestpipe/checkpoint.h)
  int checkpoint_every = 0;    // batches between checkpoints; 0: none
  bool resume = false;         // start from checkpoint_dir's newest complete checkpoint
};

}  // namespace clustertwin::real::nestpipe
