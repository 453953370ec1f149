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

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
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

class IgspPoolCache;

/// The set called `name` (above; a source may also list its domains with
/// commas, "general,code"). `corpus`: the model's training text (sources and
/// SGS read it). `igsp_pools` (may be null): where the IGSP sets take their
/// candidates from, so that "igsp" and "igsp-unique" with one seed generate
/// them once. InvalidArgument naming an unknown source or domain as `calib`
/// ("calib 'poetry': unknown calibration source ..."), or one whose text is
/// too short for a sample ("an empty calibration source").
StatusOr<CalibrationSet> make_calibration_set(const std::string& name, models::nets::ByteLm& model,
                                              const std::vector<clustertwin::models::igsp::DomainText>& corpus,
                                              const CalibrationSetOptions& options,
                                              IgspPoolCache* igsp_pools = nullptr);

/// IGSP's candidates: pool_factor x generation.samples Self-Cal texts
/// ([candidates, length] int64) and each one's perplexity under the model.
struct IgspPool {
  at::Tensor candidates;
  std::vector<double> perplexities;
};
StatusOr<IgspPool> igsp_pool(models::nets::ByteLm& model, const SelfGenOptions& generation, int pool_factor);

/// IGSP's choice of `samples` of the pool's candidates by
/// igsp::select_min_aggregation; [samples, length] int64.
StatusOr<at::Tensor> igsp_select(const IgspPool& pool, int64_t samples, int strata,
                                 clustertwin::models::igsp::AggregationSign sign);

/// IGSP itself: igsp_select of igsp_pool.
StatusOr<at::Tensor> igsp_set(models::nets::ByteLm& model, const SelfGenOptions& generation, int pool_factor,
                              int strata, clustertwin::models::igsp::AggregationSign sign);

/// IGSP pools made once and shared: both aggregation signs select from the
/// same candidates, which cost more than the rest of a study's run. Safe to
/// call from several threads: a second caller asking for a pool being made
/// waits for it. Keyed by the generation options and pool factor only, so
/// one cache serves one model's weights (copies of it included).
class IgspPoolCache {
 public:
  /// The pool igsp_pool(model, generation, pool_factor) makes, or its error.
  StatusOr<std::shared_ptr<const IgspPool>> get(models::nets::ByteLm& model, const SelfGenOptions& generation,
                                                int pool_factor);
  /// Pools made so far (errors included).
  size_t size() const;

 private:
  using Key = std::tuple<uint64_t, int64_t, int64_t, double, double, int64_t, int>;
  using Entry = std::shared_future<StatusOr<std::shared_ptr<const IgspPool>>>;
  mutable std::mutex mutex_;
  std::map<Key, Entry> pools_;
};

/// The rows of a [samples, length] byte tensor as strings.
std::vector<std::string> sample_texts(const at::Tensor& bytes);

}  // namespace clustertwin::real::igsp
