// The packers: every sample in exactly one micro-batch, no micro-batch over
// its token capacity, cost packing's balance against token packing's on the
// synthetic dataset, the greedy's order on a hand case, and refused inputs.

#include "models/flowtrain/packing.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "models/flowtrain/vlm.h"

namespace clustertwin::models::flowtrain {
namespace {

std::vector<PackItem> dataset_items(const VlmSpec& m, int n, uint64_t seed) {
  DatasetOptions o;
  o.seed = seed;
  return dataset_pack_items(m, o, n);
}

void expect_valid(const Packing& p, const std::vector<PackItem>& items, int64_t capacity) {
  std::set<int64_t> seen;
  for (size_t b = 0; b < p.bins.size(); ++b) {
    EXPECT_LE(p.tokens[b], capacity);
    for (int64_t s : p.bins[b])
      EXPECT_TRUE(seen.insert(s).second) << "sample " << s << " packed twice";
  }
  EXPECT_EQ(seen.size(), items.size());
}

// The FlowTrain issue's check: 512 samples of a step into 32 micro-batches
// (16 samples each on average, so no single sample sets the maximum).
TEST(PackingTest, CostPackingHalvesTheTokenPackersExcessImbalance) {
  for (const char* model : {"6B+72B", "300M+7B"}) {
    const VlmSpec m = *vlm_spec(model);
    for (uint64_t seed : {0, 1, 2}) {
      const std::vector<PackItem> items = dataset_items(m, 512, seed);
      const int64_t capacity = 65536;
      auto by_cost = pack_by_cost(items, 32, capacity);
      auto by_tokens = pack_by_tokens(items, 32, capacity);
      ASSERT_TRUE(by_cost.is_ok()) << by_cost.status().message();
      ASSERT_TRUE(by_tokens.is_ok()) << by_tokens.status().message();
      expect_valid(*by_cost, items, capacity);
      expect_valid(*by_tokens, items, capacity);
      const double cost = by_cost->imbalance(), tokens = by_tokens->imbalance();
      std::printf("%s seed %llu: max/mean micro-batch cost %.4f (by cost) vs %.4f (by tokens)\n", model,
                  static_cast<unsigned long long>(seed), cost, tokens);
      EXPECT_GT(tokens, cost) << "balancing tokens leaves the cost less balanced";
      EXPECT_LE(cost - 1, 0.5 * (tokens - 1)) << model << " seed " << seed;
    }
  }
}

TEST(PackingTest, LongestFirstToTheLeastLoaded) {
  const std::vector<PackItem> items = {{0, 10, 5}, {1, 10, 4}, {2, 10, 3}, {3, 10, 3}};
  auto p = pack_by_cost(items, 2, 100);
  ASSERT_TRUE(p.is_ok());
  // 5 -> bin 0, 4 -> bin 1, 3 -> bin 1 (4 < 5), 3 -> bin 0 (5 < 7).
  EXPECT_EQ(p->bins[0], (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(p->bins[1], (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(p->imbalance(), 8.0 / 7.5);
  // The capacity binds: with room for two samples a bin, the greedy's choice is overruled.
  auto tight = pack_by_cost({{0, 10, 9}, {1, 10, 1}, {2, 10, 1}, {3, 10, 1}}, 2, 20);
  ASSERT_TRUE(tight.is_ok());
  EXPECT_EQ(tight->bins[0].size(), 2u);
  EXPECT_EQ(tight->bins[1].size(), 2u);
}

TEST(PackingTest, RefusedInputs) {
  EXPECT_EQ(pack_by_cost({}, 0, 10).status().message(), "packing: 0 micro-batches (need >= 1)");
  EXPECT_EQ(pack_by_tokens({}, 1, 0).status().message(), "packing: token capacity 0 (need >= 1)");
  EXPECT_EQ(pack_by_cost({{4, 11, 1}}, 1, 10).status().message(),
            "packing: sample 4 has 11 tokens, more than a micro-batch's capacity 10");
  EXPECT_EQ(pack_by_cost({{0, 6, 2}, {1, 6, 1}}, 1, 10).status().message(),
            "packing: sample 1 (6 tokens) fits no micro-batch: 1 of 10 tokens are too few for the samples");
}

}  // namespace
}  // namespace clustertwin::models::flowtrain
