#pragma once

// The IGSP study's runs: every calibration set, for every seed, built from
// the dense model, measured (information metrics and the dense model's
// perplexity on it), used to prune a fresh copy of the model, and the pruned
// model scored per dimension against the dense one. Runs are independent
// and go to `jobs` worker threads of one intra-op thread each; a run's
// numbers do not depend on which worker ran it or when (tested). The one
// thing runs share is IGSP's candidate pool: "igsp" and "igsp-unique" with
// one seed select from the same candidates, generated once (IgspPoolCache).
//
// The analysis of the runs (means over seeds, the rho table) is
// models/igsp/analysis.h; the program that writes the tables and plots is
// experiments/igsp/igsp_study.cpp.

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/igsp/information.h"
#include "real/igsp/calibration_set.h"
#include "real/igsp/evaluate.h"
#include "real/igsp/model_pruner.h"

namespace clustertwin::real::igsp {

struct StudyOptions {
  std::string checkpoint;
  std::vector<std::string> sets;  // empty: default_study_sets()
  int seeds = 3;
  uint64_t first_seed = 0;
  ModelPruneOptions prune;                                         // SparseGPT at 60% unless changed
  CalibrationSetOptions calibration{.samples = 128, .length = 0};  // length 0: the model's context
  int eval_items = 200;                                            // arithmetic and commonsense items each
  int eval_windows = 64;                                           // held-out windows per perplexity
  int jobs = 2;
  // Fail before any run when the dense model scores 0 on a dimension (its
  // retention would be undefined: 0 over 0). Off for toy models in tests.
  bool require_dense_scores = true;
};

/// The 15 sources, then random, selfcal, sgs, igsp and igsp-unique.
std::vector<std::string> default_study_sets();

/// One calibration set with one seed.
struct StudyRun {
  std::string set, kind;
  uint64_t seed = 0;
  clustertwin::models::igsp::InformationMetrics information;
  double dense_perplexity = 0;  // of the calibration set, under the dense model
  std::vector<DimensionScore> scores;
  std::vector<double> retention;  // per dimension (kDomains order), then the total
  double seconds = 0;
};

struct StudyResult {
  std::vector<DimensionScore> dense;
  std::vector<StudyRun> runs;  // set by set (in options' order), seeds in order within each
  double seconds = 0;
};

/// Runs the study. `progress` (may be empty) is called as each run ends,
/// from the thread that ran it, one call at a time. InvalidArgument for bad
/// options (naming the field: "seeds 0: must be >= 1") or a bad set name
/// ("calib 'poetry': unknown ..."); the checkpoint's errors as
/// load_byte_lm and eval_set_for give them.
StatusOr<StudyResult> run_study(const StudyOptions& options,
                                const std::function<void(const StudyRun& run, int done, int total)>& progress);

}  // namespace clustertwin::real::igsp
