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
// the step). Both are written atomically. The manifest and the corpus it
// names are real/igsp/corpus_manifest.h.

#include <cstdint>
#include <functional>

#include "common/status.h"
#include "real/igsp/train_options.h"

namespace clustertwin::real::igsp {

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

/// Trains (or resumes) and writes the checkpoint at every interval and at
/// the end. `progress` (may be empty) is called every `report_every` steps.
/// InvalidArgument for bad options (naming the field: "batch 0: must be >=
/// 1"), a resume without a checkpoint ("resume: PATH: no such file"), or a
/// checkpoint whose options differ from the ones asked for.
StatusOr<TrainReport> train_byte_lm(const TrainOptions& options,
                                    const std::function<void(const TrainProgress&)>& progress, int report_every = 50);

}  // namespace clustertwin::real::igsp
