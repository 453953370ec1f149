#pragma once

// The information metrics of a calibration set (the IGSP paper's OIT
// metrics, at byte level), all but the dense model's perplexity, which needs
// the model (real/igsp/evaluate.h computes it):
//
//   aggregation   4-gram aggregation, both sign conventions (igsp.md: "fraction
//                 unique" makes the sign of "minimising" ambiguous):
//                   unique_4gram_fraction = distinct 4-grams / all 4-grams
//                   repeated_4gram_fraction = 1 - unique_4gram_fraction
//   coverage      the share of the 256 byte values that occur, and of the
//                 whitespace-separated word types the set's text has per 1,000 words
//   volume        bytes in all samples
//   mean length   bytes per sample

#include <cstdint>
#include <string>
#include <vector>

#include "models/common/status.h"

namespace clustertwin::igsp {

struct InformationMetrics {
  double unique_4gram_fraction = 0;
  double repeated_4gram_fraction = 0;
  double byte_coverage = 0;        // distinct byte values / 256
  double word_types_per_1000 = 0;  // distinct words per 1,000 words
  int64_t volume = 0;
  double mean_length = 0;
  int64_t samples = 0;
};

/// The metrics of `samples` (4-grams do not cross sample boundaries).
/// InvalidArgument for an empty set or one without a single 4-gram.
StatusOr<InformationMetrics> information_metrics(const std::vector<std::string>& samples);

}  // namespace clustertwin::igsp
