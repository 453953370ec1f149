#pragma once

// Scoring a ByteLm per capability dimension (the IGSP study's four): General
// and Code by perplexity on their held-out text, Math by exact match on
// held-out arithmetic (greedy decoding), Commonsense by multiple-choice
// accuracy (the option with the highest mean log-probability per byte).
// Retention is the pruned model's score over the dense one's, x 100, with
// perplexity turned around (dense / pruned), so that 100 means "as good".

#include <string>
#include <vector>

#include "common/status.h"
#include "models/igsp/corpus.h"
#include "models/torch/byte_lm.h"

namespace clustertwin::real::igsp {

/// What the dimensions are scored on.
struct EvalSet {
  std::string general_heldout, code_heldout;
  std::vector<clustertwin::models::igsp::ArithmeticItem> arithmetic;
  std::vector<clustertwin::models::igsp::ChoiceItem> facts;
};

/// The evaluation set of a checkpoint trained by train_byte_lm: its
/// manifest's seed, and the held-out text of its corpus as corpus_for
/// (real/igsp/corpus_manifest.h) reads and checks it. `items` arithmetic and
/// fact items each.
StatusOr<EvalSet> eval_set_for(const std::string& manifest_json, const std::string& checkpoint, int items = 200);

struct DimensionScore {
  clustertwin::models::igsp::Domain domain = clustertwin::models::igsp::Domain::kGeneral;
  std::string metric;  // "perplexity" or "accuracy"
  double value = 0;
  int64_t items = 0;  // bytes scored (perplexity) or questions
};

/// Greedy continuations of every prompt, each up to `max_bytes` bytes or a
/// newline (not included), the model seeing each text's last `context` bytes.
/// Prompts of one length go through the model together, one byte per step for
/// all of them, and each answer is the one a prompt gets alone, bit for bit
/// (tested). Equal prompts are decoded once.
std::vector<std::string> greedy_continuations(models::nets::ByteLm& model, const std::vector<std::string>& prompts,
                                              int max_bytes);

/// For each item and option, the mean log-probability per byte of the option
/// after the question (the text's last `context` bytes), batched as
/// greedy_continuations and equal to scoring each option alone. Options that
/// read the same text (an item asked twice) share one forward of it.
std::vector<std::vector<double>> option_scores(models::nets::ByteLm& model,
                                               const std::vector<clustertwin::models::igsp::ChoiceItem>& items);

/// The four scores, in kDomains order. `max_windows`: held-out windows of
/// context bytes per perplexity.
std::vector<DimensionScore> evaluate(models::nets::ByteLm& model, const EvalSet& set, int max_windows = 64);

/// 100 x pruned / dense (accuracy) or dense / pruned (perplexity), per
/// dimension, and their mean last ("total").
std::vector<double> retention(const std::vector<DimensionScore>& pruned, const std::vector<DimensionScore>& dense);

}  // namespace clustertwin::real::igsp
