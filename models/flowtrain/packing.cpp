#include "models/flowtrain/packing.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace clustertwin::models::flowtrain {
namespace {

// Greedy by `key`: items in descending key (ties by sample id), each to the
// bin with the least accumulated key that has room.
template <typename Key>
StatusOr<Packing> greedy(const std::vector<PackItem>& items, int bins, int64_t capacity, Key key) {
  if (bins < 1) return Status::invalid_argument("packing: " + std::to_string(bins) + " micro-batches (need >= 1)");
  if (capacity < 1) {
    return Status::invalid_argument("packing: token capacity " + std::to_string(capacity) + " (need >= 1)");
  }
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (key(items[a]) != key(items[b])) return key(items[a]) > key(items[b]);
    return items[a].sample < items[b].sample;
  });
  Packing p;
  p.bins.resize(static_cast<size_t>(bins));
  p.cost.assign(static_cast<size_t>(bins), 0);
  p.tokens.assign(static_cast<size_t>(bins), 0);
  std::vector<double> load(static_cast<size_t>(bins), 0);
  for (size_t i : order) {
    const PackItem& item = items[i];
    if (item.tokens > capacity) {
      return Status::invalid_argument("packing: sample " + std::to_string(item.sample) + " has " +
                                      std::to_string(item.tokens) + " tokens, more than a micro-batch's capacity " +
                                      std::to_string(capacity));
    }
    int best = -1;
    for (int b = 0; b < bins; ++b) {
      const size_t bi = static_cast<size_t>(b);
      if (p.tokens[bi] + item.tokens > capacity) continue;
      if (best < 0 || load[bi] < load[static_cast<size_t>(best)]) best = b;
    }
    if (best < 0) {
      return Status::invalid_argument("packing: sample " + std::to_string(item.sample) + " (" +
                                      std::to_string(item.tokens) +
                                      " tokens) fits no micro-batch: " + std::to_string(bins) + " of " +
                                      std::to_string(capacity) + " tokens are too few for the samples");
    }
    const size_t bi = static_cast<size_t>(best);
    p.bins[bi].push_back(item.sample);
    p.cost[bi] += item.cost;
    p.tokens[bi] += item.tokens;
    load[bi] += key(item);
  }
  return p;
}

}  // namespace

std::vector<PackItem> dataset_pack_items(const VlmSpec& model, const DatasetOptions& options, int samples) {
  std::vector<PackItem> items;
  for (int i = 0; i < samples; ++i) {
    const SampleCost c = sample_cost(model, dataset_sample(options, i));
    items.push_back(PackItem{i, c.llm_tokens, c.backbone_flops});
  }
  return items;
}

double Packing::imbalance() const {
  if (cost.empty()) return 0;
  const double total = std::accumulate(cost.begin(), cost.end(), 0.0);
  if (!(total > 0)) return 0;
  return *std::max_element(cost.begin(), cost.end()) / (total / static_cast<double>(cost.size()));
}

StatusOr<Packing> pack_by_cost(const std::vector<PackItem>& items, int bins, int64_t token_capacity) {
  return greedy(items, bins, token_capacity, [](const PackItem& i) { return i.cost; });
}

StatusOr<Packing> pack_by_tokens(const std::vector<PackItem>& items, int bins, int64_t token_capacity) {
  return greedy(items, bins, token_capacity, [](const PackItem& i) { return static_cast<double>(i.tokens); });
}

}  // namespace clustertwin::models::flowtrain
