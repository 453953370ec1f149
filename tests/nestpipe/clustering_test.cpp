// Sample clustering: a permutation with the micro-batch sizes of the split,
// never worse than the batch's own order, and a real gain on Zipf batches.

#include "models/nestpipe/clustering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace clustertwin::models::nestpipe {
namespace {

// Checks that `c` is a permutation of the batch and that its totals are
// those of micro_batch_key_stats (which splits by micro_batch_sizes).
void expect_consistent(const Batch& batch, int micro_batches, const Clustering& c) {
  std::vector<int> sorted = c.order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(batch.size());
  std::iota(identity.begin(), identity.end(), 0);
  ASSERT_EQ(sorted, identity) << "not a permutation";
  EXPECT_EQ(c.total_unique, micro_batch_key_stats(batch, c.order, micro_batches, 1).total_unique());
  EXPECT_EQ(c.identity_total_unique, micro_batch_key_stats(batch, {}, micro_batches, 1).total_unique());
  EXPECT_LE(c.total_unique, c.identity_total_unique);
}

TEST(ClusterSamplesTest, RejectsMicroBatchCountsOutsideTheBatch) {
  const Batch batch = {{1}, {2}, {3}};
  for (const auto& [micro, message] : std::vector<std::pair<int, std::string>>{
           {0, "clustering: micro_batches 0 is not in [1, 3] (the batch's samples)"},
           {4, "clustering: micro_batches 4 is not in [1, 3] (the batch's samples)"}}) {
    const auto c = cluster_samples(batch, micro);
    ASSERT_FALSE(c.is_ok());
    EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(c.status().message(), message);
  }
}

TEST(ClusterSamplesTest, FindsPlantedGroups) {
  // 4 groups of 4 samples; group g's samples hold keys 100g .. 100g + 9 plus one
  // key of their own (1000 + sample). Interleaved (sample s in group s mod 4),
  // every micro-batch of 4 consecutive samples holds all 4 groups:
  //   identity: 4 micro-batches x (4 groups x 10 + 4 own) = 176;
  //   grouped:  4 micro-batches x (10 + 4 own)            = 56.
  Batch batch;
  for (int s = 0; s < 16; ++s) {
    SampleKeys keys;
    for (int k = 0; k < 10; ++k)
      keys.push_back(100 * (s % 4) + k);
    keys.push_back(1000 + s);
    batch.push_back(keys);
  }
  const auto c = cluster_samples(batch, 4);
  ASSERT_TRUE(c.is_ok());
  expect_consistent(batch, 4, *c);
  EXPECT_EQ(c->identity_total_unique, 176);
  EXPECT_EQ(c->total_unique, 56);
  for (int m = 0; m < 4; ++m)  // each micro-batch is one group
    for (int i = 1; i < 4; ++i)
      EXPECT_EQ(c->order[static_cast<size_t>(4 * m + i)] % 4, c->order[static_cast<size_t>(4 * m)] % 4);
}

TEST(ClusterSamplesTest, EdgeSplitsAndUnevenSizes) {
  KeyGeneratorOptions options;
  options.vocabulary = 200;
  options.keys_per_sample = 5;
  const Batch batch = KeyGenerator(options).batch(0, 0, 10);
  // One micro-batch: any order gives the batch's unique count. One sample per
  // micro-batch: any order gives the sum of per-sample unique counts.
  const int64_t batch_unique = requester_key_stats(batch, 1).unique_keys;
  const auto one = cluster_samples(batch, 1);
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(one->total_unique, batch_unique);
  const auto each = cluster_samples(batch, 10);
  ASSERT_TRUE(each.is_ok());
  int64_t per_sample = 0;
  for (const SampleKeys& sample : batch)
    per_sample += requester_key_stats({sample}, 1).unique_keys;
  EXPECT_EQ(each->total_unique, per_sample);
  for (int micro : {3, 4, 7}) {  // 10 samples do not split evenly: sizes 4,3,3 / 3,3,2,2 / 2,2,2,1,1,1,1
    const auto c = cluster_samples(batch, micro);
    ASSERT_TRUE(c.is_ok());
    expect_consistent(batch, micro, *c);
  }
}

TEST(ClusterSamplesTest, NeverWorseThanTheIdentityOrder) {
  // Random batches over small vocabularies (many shared keys), and batches
  // already in their best order (sorted groups). Counts how often greedy
  // growth alone would have lost to the identity split, which the fallback
  // then returns.
  int cases = 0, split_cases = 0, identity_kept = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    KeyGeneratorOptions options;
    options.seed = seed;
    options.vocabulary = 20 + static_cast<int64_t>(seed % 7) * 30;
    options.zipf_exponent = 0.5 + static_cast<double>(seed % 5) * 0.3;
    options.keys_per_sample = 1 + static_cast<int>(seed % 9);
    const int samples = 8 + static_cast<int>(seed % 25);
    const int micro = 1 + static_cast<int>(seed % 6);
    const Batch batch = KeyGenerator(options).batch(0, 0, samples);
    const auto c = cluster_samples(batch, micro);
    ASSERT_TRUE(c.is_ok());
    expect_consistent(batch, micro, *c);
    ++cases;
    if (micro > 1) {  // with one micro-batch every order ties
      ++split_cases;
      identity_kept += c->total_unique == c->identity_total_unique;
    }
  }
  // Already-clustered order: group g's 4 samples hold keys 10g, 10g+1, 10g+2
  // and one of their own, and come one group after the other.
  Batch sorted;
  for (int g = 0; g < 6; ++g)
    for (int i = 0; i < 4; ++i)
      sorted.push_back({10 * g, 10 * g + 1, 10 * g + 2, 1000 + 4 * g + i});
  const auto c = cluster_samples(sorted, 6);
  ASSERT_TRUE(c.is_ok());
  expect_consistent(sorted, 6, *c);
  EXPECT_EQ(c->total_unique, 6 * (3 + 4));  // each micro-batch: its group's 3 keys + 4 own keys
  std::printf("%d random batches, %d split in 2+ micro-batches: identity order kept (growth no better) in %d\n", cases,
              split_cases, identity_kept);
}

TEST(ClusterSamplesTest, ReducesTheUniqueKeysOfZipfBatches) {
  // i.i.d. Zipf samples share only the keys that chance puts together, so the
  // gain is modest; these bounds are 2-3 points looser than what was measured.
  struct Case {
    double exponent;
    int keys, micro;
    double at_most;  // the ratio clustered / identity must not exceed this
  };
  for (const Case& c : {Case{1.05, 100, 8, 0.99}, Case{1.2, 26, 32, 0.93}, Case{1.5, 100, 32, 0.92}}) {
    KeyGeneratorOptions options;
    options.vocabulary = 10'000'000;
    options.zipf_exponent = c.exponent;
    options.keys_per_sample = c.keys;
    options.seed = 1;
    const Batch batch = KeyGenerator(options).batch(0, 0, 512);
    const auto clustering = cluster_samples(batch, c.micro);
    ASSERT_TRUE(clustering.is_ok());
    expect_consistent(batch, c.micro, *clustering);
    const double ratio =
        static_cast<double>(clustering->total_unique) / static_cast<double>(clustering->identity_total_unique);
    const int64_t batch_unique = requester_key_stats(batch, 1).unique_keys;
    std::printf(
        "zipf s=%.2f, 512 x %d keys, %d micro-batches: %ld -> %ld unique keys (ratio %.4f; %.1f%% of the "
        "%ld duplicates across micro-batches removed)\n",
        c.exponent, c.keys, c.micro, static_cast<long>(clustering->identity_total_unique),
        static_cast<long>(clustering->total_unique), ratio,
        100.0 * static_cast<double>(clustering->identity_total_unique - clustering->total_unique) /
            static_cast<double>(clustering->identity_total_unique - batch_unique),
        static_cast<long>(clustering->identity_total_unique - batch_unique));
    EXPECT_LE(ratio, c.at_most);
  }
}

TEST(ClusterSamplesTest, IsDeterministic) {
  KeyGeneratorOptions options;
  options.vocabulary = 5000;
  options.keys_per_sample = 30;
  const Batch batch = KeyGenerator(options).batch(2, 1, 128);
  EXPECT_EQ(cluster_samples(batch, 8)->order, cluster_samples(batch, 8)->order);
}

}  // namespace
}  // namespace clustertwin::models::nestpipe
