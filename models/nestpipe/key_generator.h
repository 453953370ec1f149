#pragma once

#include <cstdint>
#include <vector>

#include "common/hash.h"
#include "common/status.h"

namespace clustertwin::models::nestpipe {

/// SplitMix64 (Steele, Lea and Flood 2014): a tiny counter-based generator.
/// `mix64` (common/hash.h) is its finaliser, which also derives
/// independent streams from (seed, batch, rank, slot).

/// A SplitMix64 stream. Cheap to create, so every key slot can own one.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double next_double();

 private:
  uint64_t state_;
};

/// Samples ranks 1..n with P(k) = k^-s / H(n, s), exactly and in O(1)
/// expected time per draw, by rejection-inversion (Hörmann and Derflinger,
/// "Rejection-inversion to generate variates from monotone discrete
/// distributions", 1996).
///
/// The idea: the hat h(x) = x^-s is convex, so for every k >= 2 the area under
/// h over [k - 1/2, k + 1/2] is at least h(k). Draw u uniformly in the area
/// under h over [1/2, n + 1/2] (rank 1's cell shrunk to exactly h(1)), invert
/// u to x through the hat's integral H, round x to k, and accept when u lies
/// in the part of k's cell of width h(k): each k is accepted with area
/// exactly h(k). Acceptance is above 90% for every s tried; a squeeze
/// (`k - x <= squeeze`) accepts most draws without evaluating H.
///
/// Exact up to double rounding: u has 53 bits, so ranks whose probability is
/// below ~1e-16 of the total are placed with less resolution (this is why
/// `n` is limited to 2^53). Works for any s > 0, s = 1 included.
class ZipfSampler {
 public:
  /// Requires n >= 1 and s > 0 (checked).
  ZipfSampler(int64_t n, double s);
  int64_t sample(SplitMix64& rng) const;

  int64_t n() const { return n_; }
  double exponent() const { return s_; }
  /// The squeeze constant; exposed so that a test can check it is valid.
  double squeeze() const { return squeeze_; }
  /// H(x) = integral of t^-s from 1 to x; and its inverse.
  double hat_integral(double x) const;
  double hat_integral_inverse(double y) const;
  double hat(double x) const;

 private:
  int64_t n_;
  double s_;
  double h_integral_x1_;  // H(3/2) - h(1): the lower end of the area drawn from
  double h_integral_n_;   // H(n + 1/2): the upper end
  double squeeze_;
};

/// The generalised harmonic number H(n, s) = sum of k^-s for k = 1..n, the
/// normaliser of the Zipf law: exact for the first 2^20 terms, the rest by
/// the integral with Euler-Maclaurin corrections (relative error < 1e-12).
double zipf_harmonic(int64_t n, double s);

/// Options of the synthetic sparse-feature generator.
struct KeyGeneratorOptions {
  int64_t vocabulary = 1'000'000;  // keys are 0..vocabulary-1; key k is the (k+1)-th most frequent
  double zipf_exponent = 1.05;     // P(key k) proportional to (k+1)^-zipf_exponent
  int keys_per_sample = 100;
  double batch_overlap = 0.0;  // each key is, with this probability, a key of the previous batch
  /// Samples of one user in a batch (1: every sample its own user). A
  /// user's samples share the first round(user_shared_fraction x
  /// keys_per_sample) keys (the user's history, as of nearly the same time)
  /// and arrive interleaved with other users' samples, so deduplicating per
  /// micro-batch sends a user's history once per micro-batch that holds one
  /// of its samples: what key-centric clustering undoes.
  int samples_per_user = 1;
  double user_shared_fraction = 0.0;
  uint64_t seed = 0;
};

/// The keys of a batch that are independent Zipf draws: users x shared keys
/// + samples x own keys (users = ceil(samples / samples_per_user)). Equal to
/// samples x keys_per_sample without user grouping.
int64_t independent_draws(const KeyGeneratorOptions& options, int samples);
/// The same for a micro-batch of `micro` of the batch's `samples` samples
/// in arrival order, in expectation: the users it holds at least one sample
/// of (each user's samples are a uniform random subset of the batch's
/// positions) x shared keys + micro x own keys.
double expected_micro_batch_draws(const KeyGeneratorOptions& options, int samples, int micro);

/// InvalidArgument naming the first bad field and its value; ok otherwise.
Status validate(const KeyGeneratorOptions& options);

/// Deterministic synthetic sparse features: Zipf keys with a controllable
/// overlap between consecutive batches of one worker (NestPipe's DBP patch
/// size is set by the overlap, clustering's gain by the exponent).
///
/// A batch is a function of (seed, index, rank, samples) alone; there is no
/// hidden state, so any worker can regenerate any batch, in any order.
///
/// The model. A batch of S samples has T = S x keys_per_sample key slots.
/// Batch 0's slots are fresh Zipf draws. In batch i > 0, slot j is, with
/// probability `batch_overlap`, a copy of slot pi_i(j) of batch i-1, and
/// otherwise a fresh draw; pi_i is a pseudo-random bijection of the slots
/// (j -> a_i j + b_i mod T, a_i coprime to T) that moves copied keys to
/// other samples. Two consequences the twin relies on (key_stats.h):
///   - within a batch the T keys are i.i.d. Zipf draws at every overlap,
///     because copies come from distinct slots of the previous batch;
///   - a key of batch i is a copy of one of batch i-1 with probability
///     `batch_overlap`, so overlap sets the size of DBP's patch.
///
/// Cost. A slot's key is found by walking its copy chain back to the batch
/// where it was drawn fresh: a hash per step, one Zipf draw at the end,
/// 1 / (1 - overlap) steps on average (at most `index`). Overlap 1 is
/// special-cased (every batch is a permutation of batch 0; the permutations
/// are composed once per batch), so the cost is O(T) for every overlap
/// except those just below 1. Fresh draws are seeded per slot, which is what
/// makes one slot computable without the others.
class KeyGenerator {
 public:
  /// Requires valid options (see `create`); aborts otherwise.
  explicit KeyGenerator(const KeyGeneratorOptions& options);
  /// InvalidArgument naming the bad field and value, or the generator.
  static StatusOr<KeyGenerator> create(const KeyGeneratorOptions& options);

  /// The keys of batch `index` (>= 0) of worker `rank` (>= 0): `samples`
  /// samples of keys_per_sample keys each. The previous batch of the overlap
  /// model is batch index-1 of the same rank and sample count. A sample may
  /// hold a key twice (a user may touch an item twice); dedup is the
  /// consumer's job, as it is in the real system.
  std::vector<std::vector<int64_t>> batch(int64_t index, int rank, int samples) const;

  const KeyGeneratorOptions& options() const { return options_; }
  const ZipfSampler& sampler() const { return sampler_; }

 private:
  KeyGeneratorOptions options_;
  ZipfSampler sampler_;
};

}  // namespace clustertwin::models::nestpipe
