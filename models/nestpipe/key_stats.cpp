#include "models/nestpipe/key_stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/check.h"
#include "models/nestpipe/clustering.h"

namespace clustertwin::models::nestpipe {

int owner_of(int64_t key, int workers, Sharding sharding) {
  CT_CHECK(workers >= 1 && key >= 0) << "key " << key << ", workers " << workers;
  const uint64_t w = static_cast<uint64_t>(workers);
  const uint64_t k = static_cast<uint64_t>(key);
  return static_cast<int>(sharding == Sharding::kModulo ? k % w : mix64(k) % w);
}

// ---------------------------------------------------------------- KeySet

KeySet::KeySet(size_t expected) {
  size_t capacity = 16;
  while (capacity < 2 * expected)
    capacity *= 2;
  slots_.assign(capacity, kSentinel);
  mask_ = capacity - 1;
}

bool KeySet::insert(int64_t key) {
  if (key == kSentinel) {
    if (has_sentinel_) return false;
    has_sentinel_ = true;
    ++size_;
    return true;
  }
  if (2 * (size_ + 1) > slots_.size()) grow();
  size_t i = static_cast<size_t>(mix64(static_cast<uint64_t>(key))) & mask_;
  while (slots_[i] != kSentinel) {
    if (slots_[i] == key) return false;
    i = (i + 1) & mask_;
  }
  slots_[i] = key;
  ++size_;
  return true;
}

bool KeySet::contains(int64_t key) const {
  if (key == kSentinel) return has_sentinel_;
  size_t i = static_cast<size_t>(mix64(static_cast<uint64_t>(key))) & mask_;
  while (slots_[i] != kSentinel) {
    if (slots_[i] == key) return true;
    i = (i + 1) & mask_;
  }
  return false;
}

void KeySet::clear() {
  std::fill(slots_.begin(), slots_.end(), kSentinel);
  size_ = 0;
  has_sentinel_ = false;
}

void KeySet::grow() {
  std::vector<int64_t> old = std::move(slots_);
  slots_.assign(old.size() * 2, kSentinel);
  mask_ = slots_.size() - 1;
  size_ = has_sentinel_ ? 1 : 0;
  for (int64_t key : old)
    if (key != kSentinel) insert(key);
}

// ------------------------------------------------------------ exact counts

RequesterKeyStats requester_key_stats(const Batch& batch, int workers, Sharding sharding) {
  RequesterKeyStats stats;
  for (const SampleKeys& sample : batch)
    stats.keys_total += static_cast<int64_t>(sample.size());
  KeySet unique(static_cast<size_t>(stats.keys_total));
  stats.unique_per_owner.assign(static_cast<size_t>(workers), 0);
  for (const SampleKeys& sample : batch)
    for (int64_t key : sample)
      if (unique.insert(key)) ++stats.unique_per_owner[static_cast<size_t>(owner_of(key, workers, sharding))];
  stats.unique_keys = static_cast<int64_t>(unique.size());
  return stats;
}

int64_t StepKeyStats::pair_unique(int requester, int owner) const {
  return requesters.at(static_cast<size_t>(requester)).unique_per_owner.at(static_cast<size_t>(owner));
}

StepKeyStats step_key_stats(std::span<const Batch> batches, Sharding sharding) {
  StepKeyStats step;
  step.workers = static_cast<int>(batches.size());
  CT_CHECK(step.workers >= 1) << "a step needs at least one worker's batch";
  step.owner_keys.resize(batches.size());
  for (const Batch& batch : batches) {
    step.requesters.push_back(requester_key_stats(batch, step.workers, sharding));
    for (const SampleKeys& sample : batch)
      for (int64_t key : sample)
        step.owner_keys[static_cast<size_t>(owner_of(key, step.workers, sharding))].insert(key);
  }
  for (const KeySet& keys : step.owner_keys)
    step.unique_per_owner.push_back(static_cast<int64_t>(keys.size()));
  return step;
}

std::vector<int64_t> patch_sizes(const StepKeyStats& step, const StepKeyStats& next_step) {
  CT_CHECK(step.workers == next_step.workers) << step.workers << " vs " << next_step.workers << " workers";
  std::vector<int64_t> patch(static_cast<size_t>(step.workers), 0);
  for (size_t o = 0; o < patch.size(); ++o) {
    const KeySet& small = std::min(step.owner_keys[o], next_step.owner_keys[o],
                                   [](const KeySet& a, const KeySet& b) { return a.size() < b.size(); });
    const KeySet& large = &small == &step.owner_keys[o] ? next_step.owner_keys[o] : step.owner_keys[o];
    small.for_each([&](int64_t key) { patch[o] += large.contains(key) ? 1 : 0; });
  }
  return patch;
}

int64_t MicroBatchKeyStats::total_unique() const {
  int64_t total = 0;
  for (int64_t u : unique)
    total += u;
  return total;
}

MicroBatchKeyStats micro_batch_key_stats(const Batch& batch, std::span<const int> order, int micro_batches, int workers,
                                         Sharding sharding) {
  const int samples = static_cast<int>(batch.size());
  CT_CHECK(order.empty() || static_cast<int>(order.size()) == samples) << order.size() << " vs " << samples;
  MicroBatchKeyStats stats;
  stats.workers = workers;
  stats.unique_per_owner.assign(static_cast<size_t>(micro_batches) * static_cast<size_t>(workers), 0);
  KeySet keys;
  int at = 0;
  for (int size : micro_batch_sizes(samples, micro_batches)) {
    const size_t m = stats.unique.size();
    keys.clear();
    for (int i = 0; i < size; ++i, ++at) {
      const SampleKeys& sample = batch[static_cast<size_t>(order.empty() ? at : order[static_cast<size_t>(at)])];
      for (int64_t key : sample)
        if (keys.insert(key))
          ++stats.unique_per_owner[m * static_cast<size_t>(workers) +
                                   static_cast<size_t>(owner_of(key, workers, sharding))];
    }
    stats.unique.push_back(static_cast<int64_t>(keys.size()));
  }
  return stats;
}

// --------------------------------------------------------------- estimator

namespace {

// Sums of per-key expectations g(q) over each owner's keys (see the header).
// The 2^16 hottest keys are summed one by one, the rest integrated in log
// space (a smooth, slowly varying integrand) and spread evenly over owners.
class OwnerSums {
 public:
  OwnerSums(const KeyGeneratorOptions& options, int workers, Sharding sharding)
      : options_(options), workers_(workers), sharding_(sharding) {
    normaliser_ = zipf_harmonic(options.vocabulary, options.zipf_exponent);
  }

  template <class G>
  std::vector<double> per_owner(G g) const {
    std::vector<double> sums(static_cast<size_t>(workers_), 0.0);
    const double s = options_.zipf_exponent;
    const int64_t head = std::min<int64_t>(options_.vocabulary, int64_t{1} << 16);
    for (int64_t rank = 1; rank <= head; ++rank)
      sums[static_cast<size_t>(owner_of(rank - 1, workers_, sharding_))] +=
          g(std::pow(static_cast<double>(rank), -s) / normaliser_);
    if (head < options_.vocabulary) {
      // sum_{rank=head+1}^{V} g(q(rank)) ~ integral of g(q(x)) over [head + 1/2, V + 1/2]
      // (midpoint rule; its error is a fraction of one term). Simpson in t = ln x.
      constexpr int kIntervals = 4096;
      const double t0 = std::log(static_cast<double>(head) + 0.5);
      const double t1 = std::log(static_cast<double>(options_.vocabulary) + 0.5);
      const double dt = (t1 - t0) / kIntervals;
      double integral = 0;
      for (int i = 0; i <= kIntervals; ++i) {
        const double t = t0 + i * dt;
        const double weight = (i == 0 || i == kIntervals) ? 1 : (i % 2 == 1 ? 4 : 2);
        integral += weight * g(std::exp(-s * t) / normaliser_) * std::exp(t);
      }
      integral *= dt / 3;
      for (double& sum : sums)
        sum += integral / workers_;
    }
    return sums;
  }

 private:
  KeyGeneratorOptions options_;
  int workers_;
  Sharding sharding_;
  double normaliser_ = 1;
};

// P(a key of probability q is among n i.i.d. draws) = 1 - (1-q)^n.
double present(double q, double n) {
  return -std::expm1(n * std::log1p(-q));
}

double total(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values)
    sum += v;
  return sum;
}

}  // namespace

namespace {

// Measured on whole batches of the first ranks (about samples_to_draw samples): the unique keys of a
// worker's batch, of its micro-batches, and of its clustered micro-batches.
void measure_sampled_batches(const KeyGeneratorOptions& options, int64_t samples_to_draw, KeyStatsSummary* summary) {
  const int batch_per_worker = summary->batch_per_worker, micro_batches = summary->micro_batches;
  const int64_t wanted = (samples_to_draw + batch_per_worker - 1) / batch_per_worker;
  summary->sampled_workers = static_cast<int>(std::clamp<int64_t>(wanted, 1, summary->workers));
  const KeyGenerator generator(options);
  double unique = 0, micro = 0, clustered = 0;
  for (int rank = 0; rank < summary->sampled_workers; ++rank) {
    const Batch batch = generator.batch(/*index=*/1, rank, batch_per_worker);
    unique += static_cast<double>(requester_key_stats(batch, 1).unique_keys);
    micro += static_cast<double>(micro_batch_key_stats(batch, {}, micro_batches, 1).total_unique());
    StatusOr<Clustering> clustering = cluster_samples(batch, micro_batches);
    CT_CHECK(clustering.is_ok()) << clustering.status().message();
    clustered += static_cast<double>(clustering->total_unique);
  }
  const double draws = summary->sampled_workers;
  summary->sampled_unique_per_worker = unique / draws;
  summary->micro_batch_unique = micro / draws / micro_batches;
  summary->clustered_micro_batch_unique = clustered / draws / micro_batches;
}

// The clustered micro-batch as D independent draws: bisect D (in log space) until the model's expected
// distinct keys meet the measured mean; distinct keys grow monotonically with D. Returns D.
double clustered_draws(const OwnerSums& sums, double measured_unique, double micro_draws, double all) {
  auto distinct = [&](double d) { return total(sums.per_owner([&](double q) { return present(q, d); })); };
  double lo = 1, hi = std::max(2.0, micro_draws * 4);
  while (distinct(hi) < measured_unique && hi < all)
    hi *= 2;
  for (int i = 0; i < 40; ++i) {
    const double mid = std::sqrt(lo * hi);
    (distinct(mid) < measured_unique ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

StatusOr<KeyStatsSummary> estimate_key_stats(const KeyGeneratorOptions& options, int workers, int batch_per_worker,
                                             int micro_batches, int64_t samples_to_draw, Sharding sharding) {
  CT_RETURN_IF_ERROR(validate(options));
  auto bad = [](const std::string& field, int64_t value, const std::string& allowed) {
    return Status::invalid_argument("key statistics: '" + field + "' is " + std::to_string(value) + ", " + allowed);
  };
  if (workers < 1) return bad("workers", workers, "must be >= 1");
  if (batch_per_worker < 1) return bad("batch_per_worker", batch_per_worker, "must be >= 1");
  if (micro_batches < 1 || micro_batches > batch_per_worker)
    return bad("micro_batches", micro_batches,
               "must be in [1, batch_per_worker = " + std::to_string(batch_per_worker) + "]");
  if (samples_to_draw < 1) return bad("samples_to_draw", samples_to_draw, "must be >= 1");

  KeyStatsSummary summary;
  summary.workers = workers;
  summary.batch_per_worker = batch_per_worker;
  summary.micro_batches = micro_batches;
  // The batch's independent draws (fewer than its key slots when users share histories, key_generator.h).
  const double n = static_cast<double>(independent_draws(options, batch_per_worker));
  const double all = n * workers;
  // A copied slot of step t+1 repeats a key of step t only if that slot of step t was not overwritten by a
  // user's shared history: n of the batch x keys_per_sample slots were kept.
  const double slots = static_cast<double>(batch_per_worker) * options.keys_per_sample;
  const double fresh = 1.0 - options.batch_overlap * n / slots;
  summary.keys_per_worker = slots;

  const OwnerSums sums(options, workers, sharding);
  summary.unique_per_pair = sums.per_owner([&](double q) { return present(q, n); });
  summary.unique_per_worker = total(summary.unique_per_pair);
  const double micro_draws =
      expected_micro_batch_draws(options, batch_per_worker, batch_per_worker / std::max(1, micro_batches));
  summary.micro_unique_per_pair = sums.per_owner([&](double q) { return present(q, micro_draws); });
  summary.unique_per_owner = sums.per_owner([&](double q) { return present(q, all); });
  summary.patch_per_owner = sums.per_owner([&](double q) {
    // 1 - 2A + A C = (1 - A) - A (1 - C), with A = (1-q)^M and C = (1 - fresh q)^M.
    const double absent = std::exp(all * std::log1p(-q));
    return present(q, all) - absent * present(fresh * q, all);
  });

  measure_sampled_batches(options, samples_to_draw, &summary);

  const double hi = clustered_draws(sums, summary.clustered_micro_batch_unique, micro_draws, all);
  summary.clustered_micro_unique_per_pair = sums.per_owner([&](double q) { return present(q, hi); });
  return summary;
}

std::vector<double> expected_unique_per_owner(const KeyGeneratorOptions& options, int owners, double draws,
                                              Sharding sharding) {
  CT_CHECK(owners >= 1 && draws >= 0) << owners << " owners, " << draws << " draws";
  return OwnerSums(options, owners, sharding).per_owner([&](double q) { return present(q, draws); });
}

StatusOr<KeyStatsSummary> measured_key_stats(const std::vector<Batch>& first, const std::vector<Batch>& second,
                                             int micro_batches) {
  const int workers = static_cast<int>(first.size());
  if (workers < 1) return Status::invalid_argument("key statistics: no batches");
  if (!second.empty() && static_cast<int>(second.size()) != workers) {
    return Status::invalid_argument("key statistics: " + std::to_string(workers) + " and " +
                                    std::to_string(second.size()) + " workers in consecutive steps");
  }
  const int samples = static_cast<int>(first[0].size());
  if (micro_batches < 1 || samples % micro_batches != 0) {
    return Status::invalid_argument("key statistics: " + std::to_string(micro_batches) +
                                    " micro-batches do not divide a batch of " + std::to_string(samples));
  }
  const StepKeyStats step = step_key_stats(first);
  KeyStatsSummary k;
  k.workers = workers;
  k.batch_per_worker = samples;
  k.micro_batches = micro_batches;
  k.sampled_workers = workers;
  k.unique_per_pair.assign(workers, 0.0);
  k.micro_unique_per_pair.assign(workers, 0.0);
  k.patch_per_owner.assign(workers, 0.0);
  double micro_unique = 0, clustered_unique = 0;
  for (int r = 0; r < workers; ++r) {
    const RequesterKeyStats& req = step.requesters[r];
    k.keys_per_worker += static_cast<double>(req.keys_total) / workers;
    k.unique_per_worker += static_cast<double>(req.unique_keys) / workers;
    for (int o = 0; o < workers; ++o)
      k.unique_per_pair[o] += static_cast<double>(step.pair_unique(r, o)) / workers;
    const MicroBatchKeyStats identity = micro_batch_key_stats(first[r], {}, micro_batches, workers);
    micro_unique += static_cast<double>(identity.total_unique());
    for (int m = 0; m < micro_batches; ++m) {
      for (int o = 0; o < workers; ++o)
        k.micro_unique_per_pair[o] +=
            static_cast<double>(identity.unique_per_owner[m * workers + o]) / (workers * micro_batches);
    }
    auto clustering = cluster_samples(first[r], micro_batches);
    if (!clustering.is_ok()) return clustering.status();
    clustered_unique += static_cast<double>(clustering->total_unique);
  }
  k.sampled_unique_per_worker = k.unique_per_worker;
  k.micro_batch_unique = micro_unique / (workers * micro_batches);
  k.clustered_micro_batch_unique = clustered_unique / (workers * micro_batches);
  for (int o = 0; o < workers; ++o)
    k.unique_per_owner.push_back(static_cast<double>(step.unique_per_owner[o]));
  if (!second.empty()) {
    const std::vector<int64_t> patch = patch_sizes(step, step_key_stats(second));
    for (int o = 0; o < workers; ++o)
      k.patch_per_owner[o] = static_cast<double>(patch[o]);
  }
  return k;
}

}  // namespace clustertwin::models::nestpipe
