// The Zipf sampler's distribution, the generator's option checks,
// determinism, and the overlap between consecutive batches.

#include "models/nestpipe/key_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_set>

namespace clustertwin::models::nestpipe {
namespace {

KeyGeneratorOptions small_options() {
  KeyGeneratorOptions options;
  options.vocabulary = 1000;
  options.zipf_exponent = 1.1;
  options.keys_per_sample = 8;
  options.batch_overlap = 0.0;
  options.seed = 42;
  return options;
}

TEST(SplitMix64Test, MatchesTheReferenceSequence) {
  // The first outputs of Vigna's reference splitmix64.c seeded with 1234567.
  SplitMix64 rng(1234567);
  EXPECT_EQ(rng.next_u64(), 6457827717110365317ULL);
  EXPECT_EQ(rng.next_u64(), 3203168211198807973ULL);
  EXPECT_EQ(rng.next_u64(), 9817491932198370423ULL);
}

TEST(ValidateTest, EachBadFieldIsNamedWithItsValue) {
  struct Case {
    const char* what;
    void (*spoil)(KeyGeneratorOptions&);
    std::string message;
  };
  const Case cases[] = {
      {"empty vocabulary", [](KeyGeneratorOptions& o) { o.vocabulary = 0; },
       "key generator option 'vocabulary': 0 is not in [1, 2^53]"},
      {"vocabulary beyond exact doubles", [](KeyGeneratorOptions& o) { o.vocabulary = (int64_t{1} << 53) + 1; },
       "key generator option 'vocabulary': 9007199254740993 is not in [1, 2^53]"},
      {"zero exponent", [](KeyGeneratorOptions& o) { o.zipf_exponent = 0; },
       "key generator option 'zipf_exponent': 0 is not in (0, 100]"},
      {"negative exponent", [](KeyGeneratorOptions& o) { o.zipf_exponent = -1.5; },
       "key generator option 'zipf_exponent': -1.5 is not in (0, 100]"},
      {"NaN exponent", [](KeyGeneratorOptions& o) { o.zipf_exponent = std::nan(""); },
       "key generator option 'zipf_exponent': nan is not in (0, 100]"},
      {"absurd exponent", [](KeyGeneratorOptions& o) { o.zipf_exponent = 1e308; },
       "key generator option 'zipf_exponent': 1e+308 is not in (0, 100]"},
      {"no keys", [](KeyGeneratorOptions& o) { o.keys_per_sample = 0; },
       "key generator option 'keys_per_sample': 0 is not >= 1"},
      {"overlap above 1", [](KeyGeneratorOptions& o) { o.batch_overlap = 1.5; },
       "key generator option 'batch_overlap': 1.5 is not in [0, 1]"},
      {"negative overlap", [](KeyGeneratorOptions& o) { o.batch_overlap = -0.25; },
       "key generator option 'batch_overlap': -0.25 is not in [0, 1]"},
      {"no samples per user", [](KeyGeneratorOptions& o) { o.samples_per_user = 0; },
       "key generator option 'samples_per_user': 0 is not >= 1"},
      {"shared fraction above 1", [](KeyGeneratorOptions& o) { o.user_shared_fraction = 1.5; },
       "key generator option 'user_shared_fraction': 1.5 is not in [0, 1]"},
  };
  for (const Case& c : cases) {
    KeyGeneratorOptions options = small_options();
    c.spoil(options);
    const Status status = validate(options);
    EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << c.what;
    EXPECT_EQ(status.message(), c.message) << c.what;
    const StatusOr<KeyGenerator> generator = KeyGenerator::create(options);
    ASSERT_FALSE(generator.is_ok()) << c.what;
    EXPECT_EQ(generator.status().message(), c.message) << c.what;
  }
  EXPECT_TRUE(validate(small_options()).is_ok());
  KeyGeneratorOptions edges = small_options();
  edges.vocabulary = 1;       // one key: every draw is key 0
  edges.zipf_exponent = 1.0;  // the log case of the hat's integral
  edges.batch_overlap = 1.0;  // every batch a permutation of batch 0
  EXPECT_TRUE(validate(edges).is_ok());
}

TEST(ZipfHarmonicTest, SmallSumsAreExactAndLargeOnesMatchZeta) {
  EXPECT_DOUBLE_EQ(zipf_harmonic(3, 1.0), 1.0 + 1.0 / 2 + 1.0 / 3);
  EXPECT_DOUBLE_EQ(zipf_harmonic(2, 2.0), 1.25);  // 1 + 1/4
  // H(n, s) = zeta(s) - sum_{k>n} k^-s, and the tail is n^(1-s)/(s-1) - n^-s/2 + ...:
  // zeta(1.1) = 10.584448464950809826, (10^12)^-0.1 / 0.1 = 10^-0.2 = 0.630957344480193.
  EXPECT_NEAR(zipf_harmonic(1'000'000'000'000, 1.1), 10.584448464950810 - 0.630957344480193, 1e-9);
  // zeta(2) = pi^2/6, tail 1/n - 1/(2 n^2): at n = 10^7 the tail is 1e-7 - 5e-15.
  EXPECT_NEAR(zipf_harmonic(10'000'000, 2.0), M_PI * M_PI / 6 - 1e-7, 1e-13);
}

// Chi-square of `draws` draws against the exact law over n ranks.
double chi_square(int64_t n, double s, int draws, uint64_t seed) {
  const ZipfSampler sampler(n, s);
  SplitMix64 rng(seed);
  std::vector<int64_t> counts(static_cast<size_t>(n) + 1, 0);
  for (int i = 0; i < draws; ++i) {
    const int64_t k = sampler.sample(rng);
    EXPECT_TRUE(1 <= k && k <= n) << k;
    ++counts[static_cast<size_t>(std::clamp<int64_t>(k, 0, n))];
  }
  const double norm = zipf_harmonic(n, s);
  double chi2 = 0;
  for (int64_t k = 1; k <= n; ++k) {
    const double expected = draws * std::pow(static_cast<double>(k), -s) / norm;
    const double d = static_cast<double>(counts[static_cast<size_t>(k)]) - expected;
    chi2 += d * d / expected;
  }
  return chi2;
}

TEST(ZipfSamplerTest, ChiSquareAgainstTheExactLaw) {
  // 10 ranks: 9 degrees of freedom, chi2 < 27.88 with probability 0.999 for an
  // exact sampler; 200k draws put >= 200k / 10^2.5 / H ~ 250 in the rarest cell
  // for s = 2.5, enough for the chi-square approximation.
  for (double s : {0.3, 0.8, 1.0, 1.2, 2.5}) {
    const double chi2 = chi_square(10, s, 200'000, 7);
    EXPECT_LT(chi2, 27.88) << "s = " << s;
    std::printf("zipf n=10 s=%.1f: chi2 = %.2f (9 dof)\n", s, chi2);
  }
  // 1000 ranks, s = 1.05: 999 dof, mean 999, sd sqrt(2 x 999) = 44.7; 5 sd above: 1222.
  EXPECT_LT(chi_square(1000, 1.05, 1'000'000, 11), 1222.0);
}

TEST(ZipfSamplerTest, RankOneFrequencyAtATrillionKeys) {
  // P(1) = 1 / H(10^12, 1.1) = 1 / 9.953491 = 0.1004673; 10^6 draws: sd
  // sqrt(p (1-p) / 10^6) = 0.0003, so 5 sd is 0.0015. Rank 2: P(1) 2^-1.1.
  const ZipfSampler sampler(1'000'000'000'000, 1.1);
  SplitMix64 rng(3);
  constexpr int kDraws = 1'000'000;
  int ones = 0, twos = 0;
  int64_t largest = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kDraws; ++i) {
    const int64_t k = sampler.sample(rng);
    ones += k == 1;
    twos += k == 2;
    largest = std::max(largest, k);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double p1 = 1.0 / zipf_harmonic(1'000'000'000'000, 1.1);
  EXPECT_NEAR(p1, 0.1004673, 1e-6);
  EXPECT_NEAR(static_cast<double>(ones) / kDraws, p1, 0.0015);
  EXPECT_NEAR(static_cast<double>(twos) / kDraws, p1 * std::pow(2.0, -1.1), 0.0012);
  EXPECT_LE(largest, 1'000'000'000'000);
  // P(rank > 10^10) = (tail 10^10..10^12) / H = (10^-1 - 10^-1.2) / 0.1 / 9.95 = 0.0370: some draws land there.
  EXPECT_GT(largest, 10'000'000'000);
  std::printf("zipf n=1e12 s=1.1: %.1f M draws/s\n", kDraws / seconds / 1e6);
}

TEST(ZipfSamplerTest, SqueezeNeverAcceptsOutsideTheExactRegion) {
  // The squeeze accepts k when k - x <= squeeze; it is valid when every k's
  // exact threshold k - H^-1(H(k + 1/2) - h(k)) is at least the value at k = 2.
  // Checked while h(k) is resolvable next to H (h(k) > 1e-9 H): beyond that the
  // computed threshold is rounding noise (at s = 8, h(101) is 3 ulps of H), and
  // those ranks are drawn with probability < 1e-9 anyway. Analytically the
  // threshold tends to 1/2 + s / (2k) for large k, above every squeeze.
  for (double s : {0.1, 0.5, 1.0, 1.5, 3.0, 8.0}) {
    const ZipfSampler sampler(1'000'000, s);
    for (int k = 2; k <= 5000 && sampler.hat(k) > 1e-9 * std::max(1.0, sampler.hat_integral(k + 0.5)); ++k) {
      const double threshold = k - sampler.hat_integral_inverse(sampler.hat_integral(k + 0.5) - sampler.hat(k));
      ASSERT_GE(threshold, sampler.squeeze() - 1e-9) << "s = " << s << ", k = " << k;
    }
  }
}

TEST(KeyGeneratorTest, BatchesAreReproducibleFromSeedIndexAndRank) {
  KeyGeneratorOptions options = small_options();
  options.batch_overlap = 0.6;
  const KeyGenerator a(options), b(options);
  const auto later_first = b.batch(5, 2, 16);  // order of calls does not matter: no hidden state
  EXPECT_EQ(a.batch(4, 2, 16), b.batch(4, 2, 16));
  EXPECT_EQ(a.batch(5, 2, 16), later_first);
  EXPECT_NE(a.batch(5, 2, 16), a.batch(5, 3, 16));  // ranks draw their own keys
  EXPECT_NE(a.batch(5, 2, 16), a.batch(6, 2, 16));
  options.seed = 43;
  EXPECT_NE(KeyGenerator(options).batch(5, 2, 16), a.batch(5, 2, 16));

  const auto batch = a.batch(3, 0, 16);
  ASSERT_EQ(batch.size(), 16u);
  for (const auto& sample : batch) {
    ASSERT_EQ(sample.size(), 8u);
    for (int64_t key : sample)
      EXPECT_TRUE(0 <= key && key < 1000) << key;
  }
}

// The fraction of batch `index`'s key slots whose key is in batch index-1.
double overlap_fraction(const KeyGenerator& generator, int64_t index) {
  std::unordered_set<int64_t> previous;
  for (const auto& sample : generator.batch(index - 1, 0, 512))
    previous.insert(sample.begin(), sample.end());
  int64_t shared = 0, total = 0;
  for (const auto& sample : generator.batch(index, 0, 512)) {
    for (int64_t key : sample) {
      shared += previous.count(key);
      ++total;
    }
  }
  return static_cast<double>(shared) / static_cast<double>(total);
}

TEST(KeyGeneratorTest, OverlapIsTheShareOfKeysTakenFromThePreviousBatch) {
  // 10^12 keys at s = 0.5: P(key 0) = 1 / H(10^12, 0.5) ~ 1 / (2 x 10^6), so two
  // fresh draws almost never collide and the shared fraction is the overlap.
  // 512 x 20 = 10240 slots: sd sqrt(0.25 / 10240) = 0.005 at most; allow 0.025.
  KeyGeneratorOptions options;
  options.vocabulary = 1'000'000'000'000;
  options.zipf_exponent = 0.5;
  options.keys_per_sample = 20;
  for (double overlap : {0.0, 0.3, 0.7, 0.95, 1.0}) {
    options.batch_overlap = overlap;
    const KeyGenerator generator(options);
    for (int64_t index : {1, 7}) {
      const double measured = overlap_fraction(generator, index);
      EXPECT_NEAR(measured, overlap, 0.025) << "overlap " << overlap << ", batch " << index;
    }
  }
}

TEST(KeyGeneratorTest, FullOverlapPermutesBatchZero) {
  KeyGeneratorOptions options = small_options();
  options.batch_overlap = 1.0;
  const KeyGenerator generator(options);
  auto flat = [&](int64_t index) {
    std::vector<int64_t> keys;
    for (const auto& sample : generator.batch(index, 1, 32))
      keys.insert(keys.end(), sample.begin(), sample.end());
    return keys;
  };
  std::vector<int64_t> zero = flat(0), nine = flat(9);
  EXPECT_NE(zero, nine);  // the keys moved between samples...
  std::sort(zero.begin(), zero.end());
  std::sort(nine.begin(), nine.end());
  EXPECT_EQ(zero, nine);  // ...but they are the same keys
}

// Users: 16 samples dealt to 4 users of 4; a user's samples hold its first
// sample's first round(0.5 x 10) = 5 keys, their own other 5. Which samples
// share a prefix is a permutation, not the arrival order, and the batch stays
// a function of (seed, index, rank).
TEST(KeyGeneratorTest, SamplesOfAUserShareTheirHistory) {
  KeyGeneratorOptions options;
  options.vocabulary = 1'000'000'000'000;  // a coincidence of 5 keys is impossible in practice
  options.keys_per_sample = 10;
  options.samples_per_user = 4;
  options.user_shared_fraction = 0.5;
  const KeyGenerator generator(options);
  const auto batch = generator.batch(3, 1, 16);
  std::map<std::vector<int64_t>, std::vector<int>> users;  // shared prefix -> samples
  for (int i = 0; i < 16; ++i)
    users[std::vector<int64_t>(batch[i].begin(), batch[i].begin() + 5)].push_back(i);
  ASSERT_EQ(users.size(), 4u);
  bool contiguous = true;
  for (const auto& [prefix, samples] : users) {
    EXPECT_EQ(samples.size(), 4u);
    contiguous = contiguous && samples.back() - samples.front() == 3;
  }
  EXPECT_FALSE(contiguous);  // interleaved with other users' samples
  EXPECT_EQ(generator.batch(3, 1, 16), batch);
  // 4 users x 5 shared + 16 samples x 5 own; without users every slot is a draw.
  EXPECT_EQ(independent_draws(options, 16), 4 * 5 + 16 * 5);
  // A micro-batch of 4 misses a user with probability C(12, 4) / C(16, 4) = (12 11 10 9) / (16 15 14 13).
  const double miss = (12.0 * 11 * 10 * 9) / (16.0 * 15 * 14 * 13);
  EXPECT_NEAR(expected_micro_batch_draws(options, 16, 4), 4 * (1 - miss) * 5 + 4 * 5, 1e-12);
  EXPECT_NEAR(expected_micro_batch_draws(options, 16, 16), static_cast<double>(independent_draws(options, 16)), 1e-12);
  options.samples_per_user = 1;
  EXPECT_EQ(independent_draws(options, 16), 16 * 10);
  EXPECT_NEAR(expected_micro_batch_draws(options, 16, 4), 4 * 10, 1e-12);
}

TEST(KeyGeneratorTest, GenerationSpeed) {
  // Not a benchmark (experiments/bench is): a figure for the report.
  KeyGeneratorOptions options;
  options.vocabulary = 100'000'000;
  options.keys_per_sample = 1000;
  for (double overlap : {0.0, 0.5, 0.9}) {
    options.batch_overlap = overlap;
    const KeyGenerator generator(options);
    const auto start = std::chrono::steady_clock::now();
    const auto batch = generator.batch(20, 0, 512);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(batch.size(), 512u);
    std::printf("512 x 1000 keys, overlap %.1f: %.1f M keys/s\n", overlap, 512'000 / seconds / 1e6);
  }
}

}  // namespace
}  // namespace clustertwin::models::nestpipe
