#pragma once

// The IGSP study's calibration sets: what a pruner sees of the world. Every
// set has the same token budget (samples x length bytes), so sources differ
// in what they hold, never in how much:
//
//   sources        the four domains and every mixture of them, 15 in all:
//                  "general", "code", ..., "general+code", ..., and
//                  "general+code+math+commonsense" (also called "mix", the
//                  uniform multi-source mix): windows of training text, each
//                  window's domain drawn uniformly among the set's domains
//   random         uniformly random bytes, the negative control
//   selfcal        Self-Cal: the model's own text, temperature rising
//   sgs            SGS: continuations of source prefixes, perplexity-filtered
//   igsp           IGSP (a reconstruction, igsp.md): self-generated candidates
//                  (pool_factor x samples of them, as Self-Cal makes them),
//                  selected to minimise 4-gram aggregation with perplexity
//                  balanced over strata; "igsp" minimises the repeated
//                  fraction, "igsp-unique" the unique fraction (the other
//                  sign convention), "igsp-repeated" names the first again
//
// IGSP and Self-Cal never read the corpora: only SGS and the sources do.

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "models/igsp/corpus.h"
#include "models/igsp/information.h"
#include "models/torch/byte_lm.h"
#include "real/igsp/self_generation.h"

namespace clustertwin::real::igsp {

struct CalibrationSet {
  std::string name;
  std::string kind;  // "source", "control" or "self-generated"
  at::Tensor bytes;  // [samples, length] int64
};

/// The 15 sources of the study, in order: the four domains, then pairs,
/// triples and all four (domain names joined by '+').
std::vector<std::string> study_source_names();

/// Every name make_calibration_set knows besides the sources, for --help.
std::vector<std::string> generated_set_names();

struct CalibrationSetOptions {
  int64_t samples = 128;
  int64_t length = 128;  // at most the model's context
  uint64_t seed = 0;
  int igsp_pool_factor = 4;  // IGSP candidates per selected sample
  int igsp_strata = 4;       // perplexity strata IGSP balances
};

/// The set called `name` (above; a source may also list its domains with
/// commas, "general,code"). `corpus`: the model's training text (sources and
/// SGS read it). InvalidArgument naming an unknown source or domain, or one
/// whose text is too short for a sample ("an empty calibration source").
StatusOr<CalibrationSet> make_calibration_set(const std::string& name, torch_models::ByteLm& model,
                                              const std::vector<clustertwin::igsp::DomainText>& corpus,
                                              const CalibrationSetOptions& options);

/// IGSP itself: `generation.samples` of pool_factor x as many Self-Cal
/// candidates, chosen by igsp::select_min_aggregation on their perplexity
/// under `model`; [samples, length] int64.
StatusOr<at::Tensor> igsp_set(torch_models::ByteLm& model, const SelfGenOptions& generation, int pool_factor,
                              int strata, clustertwin::igsp::AggregationSign sign);

/// The rows of a [samples, length] byte tensor as strings.
std::vector<std::string> sample_texts(const at::Tensor& bytes);

}  // namespace clustertwin::real::igsp
