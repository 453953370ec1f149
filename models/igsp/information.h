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

#include "common/status.h"

namespace clustertwin::models::igsp {

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

/// Which 4-gram aggregation a selection minimises (both are reported: the
/// paper's gloss "fraction unique" leaves the sign open).
enum class AggregationSign {
  kRepeated,  // minimise 1 - unique/total: prefer text that adds new 4-grams
  kUnique,    // minimise unique/total: prefer text that repeats the set's 4-grams
};
const char* aggregation_sign_name(AggregationSign sign);  // "repeated", "unique"

/// IGSP's selection (a reconstruction, igsp.md): `count` of `candidates`
/// chosen to minimise the set's 4-gram aggregation while balancing
/// perplexity. The candidates are split by their `perplexity` into `strata`
/// equal quantile bins, each bin gets an equal share of `count` (the
/// remainder to the lowest bins), and the bins take turns: each adds its
/// candidate that leaves the set's aggregation lowest (ties: the lower
/// index). Returns the chosen indices in the order chosen. InvalidArgument
/// when the sizes disagree, count is not in [1, candidates], or strata is
/// not in [1, count].
StatusOr<std::vector<size_t>> select_min_aggregation(const std::vector<std::string>& candidates,
                                                     const std::vector<double>& perplexity, size_t count, int strata,
                                                     AggregationSign sign);

}  // namespace clustertwin::models::igsp
