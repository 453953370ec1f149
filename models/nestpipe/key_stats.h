#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "models/nestpipe/batch.h"
#include "models/nestpipe/key_generator.h"

namespace clustertwin::models::nestpipe {

/// How embedding rows are spread over the W workers that own them.
///   kModulo: owner = key mod W (row-wise sharding of one big table). The
///     generator's keys are Zipf ranks, so the hottest keys go round-robin to
///     owners 0, 1, 2, ...: owner 0 is the busiest, by a predictable margin.
///   kHashed: owner = mix64(key) mod W, for keys that carry meaning in their
///     low bits (raw ids): the load spreads like a random assignment.
enum class Sharding { kModulo, kHashed };

/// The owner of `key` among `workers` (>= 1). Keys are >= 0.
int owner_of(int64_t key, int workers, Sharding sharding);

/// A set of int64 keys: open addressing with linear probing, load <= 1/2.
/// Several times faster than std::unordered_set for the dedups of a step,
/// which is what every statistic here is made of.
class KeySet {
 public:
  explicit KeySet(size_t expected = 0);
  /// Inserts `key`; true when it was not there yet.
  bool insert(int64_t key);
  bool contains(int64_t key) const;
  size_t size() const { return size_; }
  /// Empties the set and keeps its capacity.
  void clear();
  /// Calls f(key) for every key, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    if (has_sentinel_) f(kSentinel);
    for (int64_t slot : slots_)
      if (slot != kSentinel) f(slot);
  }

 private:
  static constexpr int64_t kSentinel = INT64_MIN;  // marks an empty slot; stored aside when inserted
  void grow();

  std::vector<int64_t> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  bool has_sentinel_ = false;
};

/// What one requester (a worker with its batch) sends in the key All2All.
struct RequesterKeyStats {
  int64_t keys_total = 0;                 // key occurrences in the batch
  int64_t unique_keys = 0;                // after the requester's dedup
  std::vector<int64_t> unique_per_owner;  // [owner]: the keys it sends that owner
};

/// Statistics of one requester's batch, deduplicated as in NestPipe's key
/// routing stage (dedup, then bucket by owner).
RequesterKeyStats requester_key_stats(const Batch& batch, int workers, Sharding sharding = Sharding::kModulo);

/// Statistics of one training step over all W workers, each both requester
/// and owner: `batches[r]` is requester r's batch and W = batches.size().
struct StepKeyStats {
  int workers = 0;
  std::vector<RequesterKeyStats> requesters;  // [requester]
  std::vector<int64_t> unique_per_owner;      // [owner]: after the owner's dedup over all requesters
  std::vector<KeySet> owner_keys;             // [owner]: those keys, for the patch of the next step

  /// Unique keys requester r sends owner o.
  int64_t pair_unique(int requester, int owner) const;
};
StepKeyStats step_key_stats(std::span<const Batch> batches, Sharding sharding = Sharding::kModulo);

/// The size of DBP's patch per owner: how many of the owner's deduplicated
/// rows of step t+1 were also rows of step t (and so were updated by step t
/// after step t+1 prefetched them). Both steps must have the same workers.
std::vector<int64_t> patch_sizes(const StepKeyStats& step, const StepKeyStats& next_step);

/// FWP deduplicates per micro-batch: what each micro-batch sends.
struct MicroBatchKeyStats {
  int workers = 0;
  std::vector<int64_t> unique;            // [micro-batch]
  std::vector<int64_t> unique_per_owner;  // [micro-batch * workers + owner]
  int64_t total_unique() const;           // the sum over micro-batches: FWP's key traffic
};

/// Splits `batch` into `micro_batches` (micro_batch_sizes) in the order
/// `order` (a permutation of the sample indices, e.g. from cluster_samples;
/// empty: the identity) and deduplicates each micro-batch.
MicroBatchKeyStats micro_batch_key_stats(const Batch& batch, std::span<const int> order, int micro_batches, int workers,
                                         Sharding sharding = Sharding::kModulo);

/// What the twin needs about keys at a given scale, estimated without
/// generating every worker's batch (at 1,536 workers x 512 samples that
/// would be 786k samples per step).
struct KeyStatsSummary {
  int workers = 0;
  int batch_per_worker = 0;
  int micro_batches = 0;
  int sampled_workers = 0;
  double keys_per_worker = 0;                 // exact: batch x keys_per_sample
  double unique_per_worker = 0;               // model: after the requester's dedup
  double sampled_unique_per_worker = 0;       // measured on the sampled workers (checks the model)
  std::vector<double> unique_per_pair;        // model, [owner]: one requester's unique keys for that owner
  std::vector<double> unique_per_owner;       // model, [owner]: after the owner's dedup over W requesters
  std::vector<double> patch_per_owner;        // model, [owner]: DBP patch rows between consecutive steps
  std::vector<double> micro_unique_per_pair;  // model, [owner]: one micro-batch's, identity split
  double micro_batch_unique = 0;              // measured mean per micro-batch, identity split
  double clustered_micro_batch_unique = 0;    // measured mean per micro-batch after cluster_samples
  /// Model, [owner]: one clustered micro-batch's, taken as the number of
  /// independent draws whose expected distinct keys are the measured
  /// clustered_micro_batch_unique (clustering gathers a user's samples, so
  /// fewer histories are drawn; which keys are hot does not change). Empty
  /// from measured_key_stats.
  std::vector<double> clustered_micro_unique_per_pair;
};

/// Estimates KeyStatsSummary for `workers` workers with batches of
/// `batch_per_worker` samples from `options`, drawing about
/// `samples_to_draw` samples (whole batches of ranks 0, 1, ...: at least
/// one, at most `workers`).
///
/// The estimator. The generator draws the keys of one step i.i.d. from
/// Zipf(q) (key_generator.h), so a key k of probability q lands in one
/// requester's batch of n independent draws (independent_draws: fewer than
/// its keys when a user's samples share a history) with probability
/// 1 - (1-q)^n, and among all M = W n draws of a step with probability
/// 1 - (1-q)^M; an arrival-order micro-batch holds
/// expected_micro_batch_draws. Summing these over
/// the keys an owner holds gives the expected unique counts exactly;
/// consecutive steps share a key unless it is absent from both, which
/// gives the patch:
///   E[patch_o] = sum_{k in o} 1 - 2 (1-q_k)^M + (1-q_k)^M (1 - (1-overlap) q_k)^M
/// (step t+1's keys are step t's slots plus M (1-overlap') fresh draws on
/// average, overlap' = overlap x n / slots: a copy of a slot a user's
/// history overwrote repeats no key of step t). The sums run exactly over the 2^16 hottest keys, whose owner
/// matters, and the rest is integrated numerically and spread evenly over
/// owners. Micro-batch counts after clustering have no closed form: those
/// are measured on the sampled workers' batches, as is a check of the
/// model (`sampled_unique_per_worker` against `unique_per_worker`).
StatusOr<KeyStatsSummary> estimate_key_stats(const KeyGeneratorOptions& options, int workers, int batch_per_worker,
                                             int micro_batches, int64_t samples_to_draw,
                                             Sharding sharding = Sharding::kModulo);

/// The expected distinct keys of each of `owners` shards among `draws`
/// i.i.d. draws of the generator's Zipf law (the closed form behind
/// estimate_key_stats, summed per owner): e.g. the rows of a shard that any
/// of several replica groups touched, for 2D sparse parallelism's sync.
std::vector<double> expected_unique_per_owner(const KeyGeneratorOptions& options, int owners, double draws,
                                              Sharding sharding = Sharding::kModulo);

/// The key statistics of a real run, measured on its own data rather than
/// estimated (estimate_key_stats models the synthetic generator only; a
/// Criteo file has no model): `first[r]` is rank r's first batch,
/// `second[r]` its second (empty: a one-batch run, no patch). Every rank
/// computes the same numbers from the same batches, so every rank builds
/// the same plan. Means are over requesters (and micro-batches); the
/// clustered figures use cluster_samples, the policy the nestpipe variant
/// runs. InvalidArgument when the micro-batches do not divide the batch or
/// the two steps have different worker counts.
StatusOr<KeyStatsSummary> measured_key_stats(const std::vector<Batch>& first, const std::vector<Batch>& second,
                                             int micro_batches);

}  // namespace clustertwin::models::nestpipe
