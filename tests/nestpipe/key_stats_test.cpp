// Key statistics on hand-made batches with counts derived by hand, and the
// estimator against exact counts of generated steps.

#include "models/nestpipe/key_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

namespace clustertwin::models::nestpipe {
namespace {

TEST(KeySetTest, InsertsOnceGrowsAndHoldsAnyKey) {
  KeySet set;
  EXPECT_TRUE(set.insert(5));
  EXPECT_FALSE(set.insert(5));
  EXPECT_TRUE(set.insert(INT64_MIN));  // the empty-slot marker is stored aside
  EXPECT_FALSE(set.insert(INT64_MIN));
  EXPECT_TRUE(set.insert(-3));
  for (int64_t k = 100; k < 10'100; ++k)  // far past the initial 16 slots
    set.insert(k);
  EXPECT_EQ(set.size(), 3u + 10'000u);
  EXPECT_TRUE(set.contains(INT64_MIN));
  EXPECT_TRUE(set.contains(10'099));
  EXPECT_FALSE(set.contains(10'100));
  int64_t visited = 0, sum = 0;
  set.for_each([&](int64_t key) {
    ++visited;
    if (key != INT64_MIN) sum += key;
  });
  EXPECT_EQ(visited, 10'003);
  EXPECT_EQ(sum, 5 - 3 + (100 + 10'099) * 10'000 / 2);
  set.clear();
  EXPECT_EQ(set.size(), 0u);
  EXPECT_FALSE(set.contains(5));
  EXPECT_FALSE(set.contains(INT64_MIN));
}

TEST(OwnerOfTest, ModuloAndHashed) {
  EXPECT_EQ(owner_of(7, 3, Sharding::kModulo), 1);
  EXPECT_EQ(owner_of(0, 1, Sharding::kModulo), 0);
  // Hashed: in range, and the hottest keys 0..W-1 do not all land one per owner.
  std::vector<int> load(8, 0);
  for (int64_t key = 0; key < 8; ++key) {
    const int owner = owner_of(key, 8, Sharding::kHashed);
    ASSERT_TRUE(0 <= owner && owner < 8);
    ++load[static_cast<size_t>(owner)];
  }
  EXPECT_NE(load, std::vector<int>(8, 1));
}

// Two workers, modulo sharding: owner 0 holds even keys, owner 1 odd keys.
//   requester 0: {1,2,3} {2,4}   -> 5 keys, unique {1,2,3,4}: owner 0 {2,4}, owner 1 {1,3}
//   requester 1: {3,5}   {5,6,6} -> 5 keys, unique {3,5,6}:   owner 0 {6},   owner 1 {3,5}
//   owner 0 dedups {2,4} + {6} = 3 keys; owner 1 dedups {1,3} + {3,5} = {1,3,5}, 3 keys.
std::vector<Batch> step_one() {
  return {{{1, 2, 3}, {2, 4}}, {{3, 5}, {5, 6, 6}}};
}

TEST(StepKeyStatsTest, HandMadeStep) {
  const std::vector<Batch> batches = step_one();
  const StepKeyStats step = step_key_stats(batches);
  ASSERT_EQ(step.workers, 2);
  EXPECT_EQ(step.requesters[0].keys_total, 5);
  EXPECT_EQ(step.requesters[1].keys_total, 5);
  EXPECT_EQ(step.requesters[0].unique_keys, 4);
  EXPECT_EQ(step.requesters[1].unique_keys, 3);
  EXPECT_EQ(step.pair_unique(0, 0), 2);
  EXPECT_EQ(step.pair_unique(0, 1), 2);
  EXPECT_EQ(step.pair_unique(1, 0), 1);
  EXPECT_EQ(step.pair_unique(1, 1), 2);
  EXPECT_EQ(step.unique_per_owner, (std::vector<int64_t>{3, 3}));
}

TEST(StepKeyStatsTest, PatchIsTheOwnersIntersectionOfConsecutiveSteps) {
  // Next step: requester 0 {2,7}, requester 1 {5,8}: owner 0 {2,8}, owner 1 {5,7}.
  // Patch: owner 0 {2,4,6} & {2,8} = {2}; owner 1 {1,3,5} & {5,7} = {5}.
  const std::vector<Batch> first = step_one();
  const std::vector<Batch> second = {{{2, 7}}, {{5, 8}}};
  const StepKeyStats a = step_key_stats(first), b = step_key_stats(second);
  EXPECT_EQ(patch_sizes(a, b), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(patch_sizes(b, a), (std::vector<int64_t>{1, 1}));  // symmetric
  EXPECT_EQ(patch_sizes(a, a), a.unique_per_owner);            // a step against itself: all of it
}

TEST(MicroBatchTest, SizesAreEqualOrTheFirstAreOneLarger) {
  EXPECT_EQ(micro_batch_sizes(8, 4), (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(micro_batch_sizes(10, 4), (std::vector<int>{3, 3, 2, 2}));  // 10 = 4 x 2 + 2
  EXPECT_EQ(micro_batch_sizes(5, 1), (std::vector<int>{5}));
  EXPECT_EQ(micro_batch_sizes(3, 3), (std::vector<int>{1, 1, 1}));
}

TEST(MicroBatchTest, DedupIsPerMicroBatchAndFollowsTheOrder) {
  // Samples {1,2} {3,4} {1,2} {3,4}, two micro-batches of two, two owners.
  //   identity: {1,2,3,4} twice = 4 + 4 = 8; per owner (even, odd): {2,4} {1,3} = 2, 2 each.
  //   order 0,2,1,3: {1,2} and {3,4} = 2 + 2 = 4; per owner 1, 1 each.
  const Batch batch = {{1, 2}, {3, 4}, {1, 2}, {3, 4}};
  const MicroBatchKeyStats identity = micro_batch_key_stats(batch, {}, 2, 2);
  EXPECT_EQ(identity.unique, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(identity.unique_per_owner, (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(identity.total_unique(), 8);
  const std::vector<int> order = {0, 2, 1, 3};
  const MicroBatchKeyStats grouped = micro_batch_key_stats(batch, order, 2, 2);
  EXPECT_EQ(grouped.unique, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(grouped.unique_per_owner, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(grouped.total_unique(), 4);
}

TEST(EstimateKeyStatsTest, BadArgumentsAreNamed) {
  const KeyGeneratorOptions options;
  struct Case {
    int workers, batch, micro;
    int64_t draw;
    std::string message;
  };
  const Case cases[] = {
      {0, 512, 4, 512, "key statistics: 'workers' is 0, must be >= 1"},
      {8, 0, 4, 512, "key statistics: 'batch_per_worker' is 0, must be >= 1"},
      {8, 512, 0, 512, "key statistics: 'micro_batches' is 0, must be in [1, batch_per_worker = 512]"},
      {8, 512, 513, 512, "key statistics: 'micro_batches' is 513, must be in [1, batch_per_worker = 512]"},
      {8, 512, 4, 0, "key statistics: 'samples_to_draw' is 0, must be >= 1"},
  };
  for (const Case& c : cases) {
    const auto summary = estimate_key_stats(options, c.workers, c.batch, c.micro, c.draw);
    ASSERT_FALSE(summary.is_ok()) << c.message;
    EXPECT_EQ(summary.status().message(), c.message);
  }
  KeyGeneratorOptions bad = options;
  bad.keys_per_sample = 0;
  EXPECT_EQ(estimate_key_stats(bad, 8, 512, 4, 512).status().message(),
            "key generator option 'keys_per_sample': 0 is not >= 1");
}

// The mean over `seeds` x `steps` generated steps of each exact statistic, to
// hold the estimator to. Steps start at index 1 so that every step has a
// predecessor; several seeds, because at high overlap the steps of one seed
// are nearly the same draw (at overlap 1, exactly).
struct Measured {
  std::vector<double> unique_per_owner, patch_per_owner, pair_per_owner;
  double unique_per_worker = 0;
};

Measured measure(KeyGeneratorOptions options, int workers, int batch, int seeds, int steps_per_seed,
                 Sharding sharding) {
  Measured m;
  m.unique_per_owner.assign(static_cast<size_t>(workers), 0);
  m.patch_per_owner.assign(static_cast<size_t>(workers), 0);
  m.pair_per_owner.assign(static_cast<size_t>(workers), 0);
  const int steps = seeds * steps_per_seed;
  for (int seed = 0; seed < seeds; ++seed) {
    options.seed = static_cast<uint64_t>(seed);
    const KeyGenerator generator(options);
    auto step_at = [&](int64_t index) {
      std::vector<Batch> batches;
      for (int r = 0; r < workers; ++r)
        batches.push_back(generator.batch(index, r, batch));
      return step_key_stats(batches, sharding);
    };
    StepKeyStats previous = step_at(0);
    for (int64_t t = 1; t <= steps_per_seed; ++t) {
      StepKeyStats step = step_at(t);
      const std::vector<int64_t> patch = patch_sizes(previous, step);
      for (int o = 0; o < workers; ++o) {
        m.unique_per_owner[static_cast<size_t>(o)] +=
            static_cast<double>(step.unique_per_owner[static_cast<size_t>(o)]) / steps;
        m.patch_per_owner[static_cast<size_t>(o)] += static_cast<double>(patch[static_cast<size_t>(o)]) / steps;
        for (int r = 0; r < workers; ++r)
          m.pair_per_owner[static_cast<size_t>(o)] += static_cast<double>(step.pair_unique(r, o)) / steps / workers;
      }
      for (const RequesterKeyStats& r : step.requesters)
        m.unique_per_worker += static_cast<double>(r.unique_keys) / steps / workers;
      previous = std::move(step);
    }
  }
  return m;
}

TEST(EstimateKeyStatsTest, MatchesExactCountsOfGeneratedSteps) {
  // 4 workers x 64 samples x 20 keys = 5120 keys a step over 10^5 keys at s = 1.1.
  // An owner holds ~455 unique keys a step, with a standard deviation of 17
  // (measured over 200 steps at overlap 0). Averaged over 10 seeds x 8 steps,
  // and at worst (overlap 1: one draw per seed) over 10 independent draws,
  // the standard error is at most 17 / sqrt(10) / 455 = 1.2%; 3% is 2.5 of
  // them, and the seeds are fixed. 10^5 > 2^16 keys: the estimator's exact
  // head and integrated tail are both exercised.
  KeyGeneratorOptions options;
  options.vocabulary = 100'000;
  options.zipf_exponent = 1.1;
  options.keys_per_sample = 20;
  struct Case {
    double overlap;
    Sharding sharding;
    int samples_per_user = 1;  // 4 with 3/4 of the keys shared: 16 x 15 + 64 x 5 = 560 independent draws
  };
  for (const auto [overlap, sharding, users] :
       {Case{0.0, Sharding::kModulo}, Case{0.5, Sharding::kModulo}, Case{1.0, Sharding::kModulo},
        Case{0.5, Sharding::kHashed}, Case{0.5, Sharding::kModulo, 4}}) {
    options.batch_overlap = overlap;
    options.samples_per_user = users;
    options.user_shared_fraction = users > 1 ? 0.75 : 0.0;
    const Measured m = measure(options, 4, 64, 10, 8, sharding);
    const auto estimate = estimate_key_stats(options, 4, 64, 4, 128, sharding);
    ASSERT_TRUE(estimate.is_ok()) << estimate.status().message();
    EXPECT_EQ(estimate->sampled_workers, 2);  // 128 samples = 2 batches of 64
    EXPECT_EQ(estimate->keys_per_worker, 64 * 20);
    EXPECT_NEAR(estimate->unique_per_worker / m.unique_per_worker, 1.0, 0.02) << "overlap " << overlap;
    for (int o = 0; o < 4; ++o) {
      const size_t i = static_cast<size_t>(o);
      EXPECT_NEAR(estimate->unique_per_owner[i] / m.unique_per_owner[i], 1.0, 0.03) << "owner " << o;
      EXPECT_NEAR(estimate->patch_per_owner[i] / m.patch_per_owner[i], 1.0, 0.03) << "owner " << o;
      EXPECT_NEAR(estimate->unique_per_pair[i] / m.pair_per_owner[i], 1.0, 0.03) << "owner " << o;
    }
    std::printf("overlap %.1f, %s: owner 0 unique %.1f (measured %.1f), patch %.1f (measured %.1f)\n", overlap,
                sharding == Sharding::kModulo ? "modulo" : "hashed", estimate->unique_per_owner[0],
                m.unique_per_owner[0], estimate->patch_per_owner[0], m.patch_per_owner[0]);
  }
}

TEST(EstimateKeyStatsTest, ClosedFormsAtTheEdgesOfOverlap) {
  // Overlap 1: step t+1 holds exactly step t's keys, so the patch is all of them.
  // Overlap 0: the steps are independent, E[patch] = sum (1 - (1-q)^M)^2 < unique.
  KeyGeneratorOptions options;
  options.vocabulary = 50'000;
  options.keys_per_sample = 10;
  options.batch_overlap = 1.0;
  const auto full = estimate_key_stats(options, 3, 32, 2, 32);
  ASSERT_TRUE(full.is_ok());
  for (int o = 0; o < 3; ++o)
    EXPECT_NEAR(full->patch_per_owner[static_cast<size_t>(o)], full->unique_per_owner[static_cast<size_t>(o)], 1e-6);
  options.batch_overlap = 0.0;
  const auto none = estimate_key_stats(options, 3, 32, 2, 32);
  ASSERT_TRUE(none.is_ok());
  for (int o = 0; o < 3; ++o)
    EXPECT_LT(none->patch_per_owner[static_cast<size_t>(o)], 0.9 * none->unique_per_owner[static_cast<size_t>(o)]);
}

TEST(EstimateKeyStatsTest, PaperScaleInAFewSeconds) {
  // 1,536 workers x 512 samples (786k samples a step), 100 keys each, 10^9 keys.
  KeyGeneratorOptions options;
  options.vocabulary = 1'000'000'000;
  options.zipf_exponent = 1.05;
  options.keys_per_sample = 100;
  options.batch_overlap = 0.3;
  const auto start = std::chrono::steady_clock::now();
  const auto summary = estimate_key_stats(options, 1536, 512, 8, 1024);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(summary.is_ok()) << summary.status().message();
  EXPECT_EQ(summary->sampled_workers, 2);
  ASSERT_EQ(summary->unique_per_owner.size(), 1536u);
  const double owners_total = std::accumulate(summary->unique_per_owner.begin(), summary->unique_per_owner.end(), 0.0);
  // Owners dedup across requesters: fewer than all requesters' unique keys, more than one's.
  EXPECT_LT(owners_total, 1536 * summary->unique_per_worker);
  EXPECT_GT(owners_total, summary->unique_per_worker);
  EXPECT_NEAR(summary->sampled_unique_per_worker / summary->unique_per_worker, 1.0, 0.02);
  EXPECT_LE(summary->clustered_micro_batch_unique, summary->micro_batch_unique);
  for (size_t o = 0; o < 1536; ++o)
    EXPECT_LE(summary->patch_per_owner[o], summary->unique_per_owner[o]);
  std::printf(
      "1536 workers: unique per worker %.0f of %.0f keys, per owner %.0f (owner 0) .. %.0f (owner 1535), patch %.0f, "
      "micro-batch unique %.0f -> %.0f clustered; %.2f s\n",
      summary->unique_per_worker, summary->keys_per_worker, summary->unique_per_owner[0],
      summary->unique_per_owner[1535], summary->patch_per_owner[0], summary->micro_batch_unique,
      summary->clustered_micro_batch_unique, seconds);
}

TEST(MeasuredKeyStatsTest, CountsTheRunsOwnBatches) {
  // Step 0: kBatch on both ranks; step 1 shares key 2 and 9 with it.
  const Batch batch = {{9, 2}, {4, 7}, {2, 2}, {7, 5}};
  const std::vector<Batch> first = {batch, batch};
  const std::vector<Batch> second = {{{2, 9}, {10, 12}, {14, 16}, {18, 20}}, {{2, 2}, {2, 2}, {2, 2}, {2, 2}}};
  auto k = measured_key_stats(first, second, 2);
  ASSERT_TRUE(k.is_ok()) << k.status().message();
  EXPECT_EQ(k->keys_per_worker, 8);    // 4 samples x 2 keys
  EXPECT_EQ(k->unique_per_worker, 5);  // 2 4 5 7 9
  EXPECT_EQ(k->unique_per_owner, (std::vector<double>{2, 3}));
  EXPECT_EQ(k->unique_per_pair, (std::vector<double>{2, 3}));
  EXPECT_EQ(k->patch_per_owner, (std::vector<double>{1, 1}));  // owner 0: key 2; owner 1: key 9
  EXPECT_EQ(k->micro_batch_unique, 3.5);                       // (4 + 3) / 2 micro-batches
  EXPECT_LE(k->clustered_micro_batch_unique, k->micro_batch_unique);
  EXPECT_EQ(measured_key_stats(first, second, 3).status().message(),
            "key statistics: 3 micro-batches do not divide a batch of 4");
}

// Users whose samples share their history: per-micro-batch deduplication in
// arrival order resends a user's history in every micro-batch holding one of
// its samples, and key-centric clustering, which gathers a user's samples,
// removes most of that (the order, not a figure: clustered below half of the
// arrival order's keys), while the estimator's arrival-order expectation
// (expected_micro_batch_draws) matches the measured micro-batches.
TEST(EstimateKeyStatsTest, ClusteringGathersUsersThatArrivalOrderSpreads) {
  KeyGeneratorOptions options;
  options.vocabulary = 1'000'000'000;  // few coincidences: distinct keys are nearly the draws
  options.zipf_exponent = 1.05;
  options.keys_per_sample = 100;
  options.samples_per_user = 8;
  options.user_shared_fraction = 0.9;
  const auto users = estimate_key_stats(options, 16, 512, 16, 1024);
  ASSERT_TRUE(users.is_ok()) << users.status().message();
  EXPECT_LT(users->clustered_micro_batch_unique, 0.5 * users->micro_batch_unique);
  // Arrival order: E[draws] = 64 users x (1 - C(504, 32) / C(512, 32)) x 90 + 32 x 10, of which the model's
  // expected distinct keys (micro_unique_per_pair, summed over owners) match the 2 x 16 measured
  // micro-batches (the users a micro-batch holds vary by ~12% from one to the next: ~2% over 32).
  const double draws = expected_micro_batch_draws(options, 512, 32);
  double model = 0;
  for (double v : users->micro_unique_per_pair)
    model += v;
  EXPECT_NEAR(users->micro_batch_unique / model, 1.0, 0.06);
  EXPECT_LT(model, draws);  // hot keys repeat
  // The clustered micro-batch as independent draws: its expected distinct keys are the measured mean, and
  // the fewer keys a micro-batch holds, the more its hot keys' owners stand out (max over mean per owner).
  auto sum = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  auto skew = [&](const std::vector<double>& v) {
    return *std::max_element(v.begin(), v.end()) * static_cast<double>(v.size()) / sum(v);
  };
  EXPECT_NEAR(sum(users->clustered_micro_unique_per_pair) / users->clustered_micro_batch_unique, 1.0, 1e-6);
  EXPECT_GT(skew(users->clustered_micro_unique_per_pair), skew(users->micro_unique_per_pair));
  EXPECT_GT(skew(users->micro_unique_per_pair), skew(users->unique_per_pair));
  options.samples_per_user = 1;
  const auto iid = estimate_key_stats(options, 16, 512, 16, 1024);
  ASSERT_TRUE(iid.is_ok()) << iid.status().message();
  EXPECT_GT(iid->clustered_micro_batch_unique, 0.9 * iid->micro_batch_unique);  // i.i.d. samples: little to gain
}

}  // namespace
}  // namespace clustertwin::models::nestpipe
