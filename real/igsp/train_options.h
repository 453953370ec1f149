#pragma once

// What `clustertwin igsp train` asks for (real/igsp/train.h trains it;
// real/igsp/corpus_manifest.h reads its corpus). Plain C++, no libtorch:
// the command's arguments (real/igsp/igsp_command.h).

#include <cstdint>
#include <string>
#include <vector>

#include "models/torch/byte_lm_options.h"

namespace clustertwin::real::igsp {

/// The fields' names are those of the library's messages ("batch 0: must be
/// >= 1"); the command line says which flag set each.
struct TrainOptions {
  models::nets::ByteLmOptions model;
  uint64_t seed = 0;
  int64_t batch = 16;
  double lr = 2e-3;
  double weight_decay = 0.01;
  int64_t warmup_steps = 50;
  int64_t max_steps = 0;   // 0: until max_minutes; also the learning-rate schedule's length
  int64_t stop_at = 0;     // > 0: stop (and checkpoint) at this step, the schedule unchanged
  double max_minutes = 0;  // 0: until max_steps (one of the two must be set)
  double checkpoint_minutes = 5;
  uint64_t domain_bytes = 1 << 20;         // training text per domain (General and Code: at most)
  std::vector<std::string> general_roots;  // folders, packs or files (igsp::system_text); empty: the shipped pack
  std::vector<std::string> code_roots;
  std::string out;  // the checkpoint
  bool resume = false;
};

}  // namespace clustertwin::real::igsp
