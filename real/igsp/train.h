#pragma once

// Training the IGSP study's ByteLm on the four domains (models/igsp/corpus.h)
// on this machine: one command, a checkpoint every few minutes, resume.
//
// Each step draws `batch` windows of context + 1 bytes, each from a domain
// chosen uniformly (so the domains weigh the same whatever their sizes), and
// takes an AdamW step on the mean next-byte cross-entropy. The windows of
// step s depend only on (seed, s), so a run resumed from its checkpoint
// continues exactly as if it had not stopped (tested).
//
// Files: OUT is the model checkpoint (models/torch/byte_lm.h; its meta JSON
// is the manifest: options, seed, step, loss, and the corpus files with
// their sizes and CRC-32s, a pack's path relative to OUT's folder);
// OUT.state holds what resuming needs besides (the optimiser's moments and
// the step). Both are written atomically.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/igsp/corpus.h"
#include "models/torch/byte_lm.h"

namespace clustertwin::real::igsp {

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

/// The four domains' text as TrainOptions asks for it.
StatusOr<std::vector<clustertwin::models::igsp::DomainText>> training_corpus(const TrainOptions& options);

struct TrainProgress {
  int64_t step = 0;
  double loss = 0;  // mean over the steps since the last report
  double tokens_per_s = 0;
  double elapsed_s = 0;
  bool checkpointed = false;
};

struct TrainReport {
  int64_t first_step = 0;  // 0, or where a resumed run started
  int64_t steps = 0;       // the step count reached
  double last_loss = 0;
  double seconds = 0;
  int checkpoints = 0;
};

/// Points the manifest of `checkpoint` at other copies of its General and
/// Code text: `general_roots` and `code_roots` as TrainOptions takes them
/// (an empty list leaves that domain as it is). The text read from them must
/// be byte for byte the train and held-out text the manifest names, whose
/// files must still be there (corpus_for); InvalidArgument naming the domain
/// otherwise. The checkpoint is rewritten with the new manifest and its
/// parameters as they were: read back and compared bit for bit (Internal if
/// not).
Status relocate_corpus(const std::string& checkpoint, const std::vector<std::string>& general_roots,
                       const std::vector<std::string>& code_roots);

/// Trains (or resumes) and writes the checkpoint at every interval and at
/// the end. `progress` (may be empty) is called every `report_every` steps.
/// InvalidArgument for bad options, a --resume without a checkpoint, or a
/// checkpoint whose options differ from the ones asked for.
StatusOr<TrainReport> train_byte_lm(const TrainOptions& options,
                                    const std::function<void(const TrainProgress&)>& progress, int report_every = 50);

}  // namespace clustertwin::real::igsp
