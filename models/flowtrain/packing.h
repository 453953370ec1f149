#pragma once

// FlowTrain's dynamic packing scheduler and its baseline: ready samples go
// into a fixed number of micro-batches (bins) of at most `token_capacity`
// tokens each.
//
//   by cost    longest-processing-time first: samples by descending
//              backbone cost, each to the bin with the least accumulated
//              cost that still has room. Cost is what a backbone worker
//              spends, ~6 x parameters x tokens plus attention's square
//              (models/flowtrain/vlm.h sample_cost): two samples of equal
//              tokens cost differently when one is a single long sequence.
//   by tokens  the baseline (Megatron-style balanced greedy knapsack):
//              the same greedy on token counts, which balances tokens, not
//              FLOPs.
//
// Reconstruction: the paper names cost-based packing; the greedy (LPT,
// within 4/3 of the optimal makespan) is our choice.

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "models/flowtrain/vlm.h"

namespace clustertwin::models::flowtrain {

struct PackItem {
  int64_t sample = 0;
  int64_t tokens = 0;
  double cost = 0;
};

struct Packing {
  std::vector<std::vector<int64_t>> bins;  // sample ids per micro-batch
  std::vector<double> cost;                // per bin
  std::vector<int64_t> tokens;             // per bin
  /// max / mean of the bins' costs (1 is perfect balance); 0 without cost.
  double imbalance() const;
};

/// The first `samples` samples of the dataset `options` as packing items
/// (backbone tokens and backbone cost under `model`).
std::vector<PackItem> dataset_pack_items(const VlmSpec& model, const DatasetOptions& options, int samples);

/// InvalidArgument for bins < 1, capacity < 1, a sample longer than the
/// capacity, or samples that do not fit the bins' room (naming the first).
StatusOr<Packing> pack_by_cost(const std::vector<PackItem>& items, int bins, int64_t token_capacity);
StatusOr<Packing> pack_by_tokens(const std::vector<PackItem>& items, int bins, int64_t token_capacity);

}  // namespace clustertwin::models::flowtrain
