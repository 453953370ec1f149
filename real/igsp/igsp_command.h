#pragma once

// The IGSP kernel's commands, its one entry for the command line:
// `clustertwin igsp train|manifest|relocate`, `prune` and `eval` (cli/
// igsp_command.cpp registers their flags and calls these). No torch in this
// header. Messages name the arguments' fields ("sparsity 1.000000: must be in
// [0, 1)"); the command line says which flag set each.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "real/igsp/train_options.h"

namespace clustertwin::real::igsp {

/// `igsp train`: trains (or resumes) the ByteLm as `options` ask
/// (real/igsp/train.h), with progress on stderr and one line on stdout.
Status run_igsp_train(const TrainOptions& options);

struct ManifestArgs {
  std::string model;  // the checkpoint
};

/// `igsp manifest`: prints the checkpoint's manifest (JSON).
Status run_igsp_manifest(const ManifestArgs& args);

struct RelocateArgs {
  std::string model;                 // the checkpoint to rewrite
  std::vector<std::string> general;  // where its General text now is (empty: where it was)
  std::vector<std::string> code;     // where its Code text now is (empty: where it was)
};

/// `igsp relocate`: points the checkpoint's manifest at other copies of its
/// text (relocate_corpus in real/igsp/corpus_manifest.h).
Status run_igsp_relocate(const RelocateArgs& args);

struct PruneArgs {
  std::string model, out;  // the dense checkpoint, the pruned one to write
  std::string method = "sparsegpt";
  std::string calib = "mix";  // the calibration set (make_calibration_set's names)
  std::string nm;             // "N:M" structured sparsity instead of `sparsity`; empty: none
  double sparsity = 0.6;      // unstructured, in [0, 1)
  int64_t samples = 128;      // calibration windows of the model's context
  uint64_t seed = 0;          // of the calibration draw
};

/// `prune`: prunes a copy of the checkpoint layer by layer on a calibration
/// set drawn from its training domains and writes it, its manifest recording
/// how.
Status run_prune(const PruneArgs& args);

struct EvalArgs {
  std::string model;  // the checkpoint to score
  int items = 200;    // arithmetic and commonsense items each
  bool json = false;  // JSON on stdout instead of the table
};

/// `eval`: the checkpoint's score per capability dimension.
Status run_eval(const EvalArgs& args);

}  // namespace clustertwin::real::igsp
