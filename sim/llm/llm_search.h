#pragma once

// Which split of a transformer over N GPUs trains fastest (`clustertwin plan
// llm`): every split that fits the device's memory is ranked by a closed form
// of its step (estimate_step_seconds), and the best few are simulated by the
// twin, whose step decides.
//
// Candidates: tp a power of two up to a node's GPUs (dividing heads, the
// kv-heads and the MLP), pp dividing the layers, dp the rest; micro-batches
// of 1, 2, 4 or 8 sequences; 1f1b, and interleaved with 2-8 virtual stages
// where the layers and micro-batches allow; recomputation none, selective or
// full; the distributed optimizer (zero 1) and sequence parallelism with tp
// > 1 (Megatron-LM's usual settings; the search leaves them on).

#include <vector>

#include "sim/llm/llm_twin.h"

namespace clustertwin::sim::llm {

/// A closed form of one step, for ranking: the busiest stage's passes with
/// their tensor-parallel all-reduces (ring, over the node's links) for M x V
/// micro-batch chunks, the pipeline's fill and drain ((P - 1) chunks'
/// worth), the last stage's LM head, the last gradient bucket's reduction
/// and the zero 1 weights' all-gather over the NICs, and the optimizer.
double estimate_step_seconds(const LlmSetup& setup, const cluster::ClusterProfile& profile);

/// The splits of `base` (its model, global batch and precision; the split's
/// other fields are searched) over `workers` GPUs of `profile` that fit its
/// memory.
std::vector<models::llm::Split> candidate_splits(const LlmSetup& base, const cluster::ClusterProfile& profile,
                                                 int workers);

struct RankedSplit {
  models::llm::Split split;
  double estimate_s = 0;
  double step_s = 0;  // simulated; 0 when not simulated
  double mfu = 0;
  double tokens_per_s = 0;
  double memory_gib = 0;
};

struct SplitSearch {
  int candidates = 0;               // splits that fit memory
  std::vector<RankedSplit> ranked;  // the simulated ones, fastest first
};

/// The `simulate` best candidates by estimate, simulated (`parallel` at a
/// time), fastest first. InvalidArgument when no split fits.
StatusOr<SplitSearch> search_splits(const LlmSetup& base, const cluster::ClusterProfile& profile, int workers,
                                    int simulate, int parallel);

}  // namespace clustertwin::sim::llm
