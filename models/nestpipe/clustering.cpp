#include "models/nestpipe/clustering.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/check.h"

namespace clustertwin::models::nestpipe {
namespace {

// Dense ids 0..D-1 for the distinct keys of a batch: open addressing.
class KeyIndex {
 public:
  explicit KeyIndex(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected)
      capacity *= 2;
    keys_.assign(capacity, 0);
    ids_.assign(capacity, -1);
    mask_ = capacity - 1;
  }
  // The id of `key`, a new one when it is not there yet. Never grows:
  // `expected` bounds the number of distinct keys.
  int id(int64_t key) {
    size_t i = static_cast<size_t>(mix64(static_cast<uint64_t>(key))) & mask_;
    while (ids_[i] >= 0 && keys_[i] != key)
      i = (i + 1) & mask_;
    if (ids_[i] < 0) {
      keys_[i] = key;
      ids_[i] = size_++;
    }
    return ids_[i];
  }
  int size() const { return size_; }

 private:
  std::vector<int64_t> keys_;
  std::vector<int> ids_;
  size_t mask_ = 0;
  int size_ = 0;
};

// The batch in dense ids: each sample's distinct keys, and each key's
// frequency (the number of samples holding it).
struct DenseBatch {
  std::vector<std::vector<int>> samples;
  std::vector<int> frequency;
};

DenseBatch dense_batch(const Batch& batch) {
  size_t occurrences = 0;
  for (const SampleKeys& sample : batch)
    occurrences += sample.size();
  KeyIndex index(occurrences);
  DenseBatch dense;
  dense.samples.resize(batch.size());
  std::vector<int> seen_in;  // [id]: the last sample that held it, to dedup within a sample
  for (size_t s = 0; s < batch.size(); ++s) {
    for (int64_t key : batch[s]) {
      const int id = index.id(key);
      if (id == static_cast<int>(seen_in.size())) {
        seen_in.push_back(-1);
        dense.frequency.push_back(0);
      }
      if (seen_in[static_cast<size_t>(id)] == static_cast<int>(s)) continue;
      seen_in[static_cast<size_t>(id)] = static_cast<int>(s);
      ++dense.frequency[static_cast<size_t>(id)];
      dense.samples[s].push_back(id);
    }
  }
  return dense;
}

// Sum over micro-batches of their distinct keys, for samples in `order`.
int64_t total_unique(const DenseBatch& dense, const std::vector<int>& order, const std::vector<int>& sizes) {
  std::vector<int> stamp(dense.frequency.size(), -1);
  int64_t total = 0;
  size_t at = 0;
  for (int m = 0; m < static_cast<int>(sizes.size()); ++m) {
    for (int i = 0; i < sizes[static_cast<size_t>(m)]; ++i, ++at) {
      for (int id : dense.samples[static_cast<size_t>(order[at])]) {
        if (stamp[static_cast<size_t>(id)] == m) continue;
        stamp[static_cast<size_t>(id)] = m;
        ++total;
      }
    }
  }
  return total;
}

// A key is scored when it is shared (2 <= f) and not held by most samples.
bool is_scored(const DenseBatch& dense, int id) {
  const int samples = static_cast<int>(dense.samples.size());
  const int f = dense.frequency[static_cast<size_t>(id)];
  return f >= 2 && 2 * f <= samples;
}

// Posting lists of the scored keys, in CSR form: postings[begin[id] .. begin[id+1]).
struct Postings {
  std::vector<int> begin;
  std::vector<int> postings;
};

Postings scored_postings(const DenseBatch& dense) {
  const int samples = static_cast<int>(dense.samples.size());
  const size_t distinct = dense.frequency.size();
  Postings out;
  out.begin.assign(distinct + 1, 0);
  for (size_t id = 0; id < distinct; ++id)
    out.begin[id + 1] = out.begin[id] + (is_scored(dense, static_cast<int>(id)) ? dense.frequency[id] : 0);
  out.postings.resize(static_cast<size_t>(out.begin[distinct]));
  std::vector<int> fill(out.begin.begin(), out.begin.end() - 1);
  for (int s = 0; s < samples; ++s)
    for (int id : dense.samples[static_cast<size_t>(s)])
      if (is_scored(dense, id)) out.postings[static_cast<size_t>(fill[static_cast<size_t>(id)]++)] = s;
  return out;
}

// Seeds: most scored keys first, then the lowest index.
std::vector<int> seed_order(const DenseBatch& dense) {
  const int samples = static_cast<int>(dense.samples.size());
  std::vector<int> shared(static_cast<size_t>(samples), 0);
  for (int s = 0; s < samples; ++s)
    for (int id : dense.samples[static_cast<size_t>(s)])
      shared[static_cast<size_t>(s)] += is_scored(dense, id) ? 1 : 0;
  std::vector<int> seeds(static_cast<size_t>(samples));
  std::iota(seeds.begin(), seeds.end(), 0);
  std::stable_sort(seeds.begin(), seeds.end(),
                   [&](int a, int b) { return shared[static_cast<size_t>(a)] > shared[static_cast<size_t>(b)]; });
  return seeds;
}

// Greedy growth (see the header).
std::vector<int> grow_micro_batches(const DenseBatch& dense, const std::vector<int>& sizes) {
  const int samples = static_cast<int>(dense.samples.size());
  const size_t distinct = dense.frequency.size();
  const Postings scored = scored_postings(dense);
  const std::vector<int> seeds = seed_order(dense);
  size_t next_seed = 0;
  std::vector<int> order;
  order.reserve(static_cast<size_t>(samples));
  std::vector<char> assigned(static_cast<size_t>(samples), 0);
  std::vector<int> score(static_cast<size_t>(samples), 0);  // overlap with the micro-batch being grown
  std::vector<int> in_batch(distinct, -1);                  // [id]: the last micro-batch that holds it
  std::vector<std::vector<int>> buckets(1);                 // [score]: samples that reached it (lazy)
  std::vector<int> raised;                                  // samples with a score > 0, to reset

  for (int m = 0; m < static_cast<int>(sizes.size()); ++m) {
    for (int s : raised)
      score[static_cast<size_t>(s)] = 0;
    raised.clear();
    for (auto& bucket : buckets)
      bucket.clear();
    int top = 0;
    for (int count = 0; count < sizes[static_cast<size_t>(m)]; ++count) {
      int pick = -1;
      while (top > 0 && pick < 0) {
        auto& bucket = buckets[static_cast<size_t>(top)];
        while (!bucket.empty() && pick < 0) {
          const int s = bucket.back();
          bucket.pop_back();
          if (!assigned[static_cast<size_t>(s)] && score[static_cast<size_t>(s)] == top) pick = s;
        }
        if (pick < 0) --top;
      }
      if (pick < 0) {
        while (assigned[static_cast<size_t>(seeds[next_seed])])
          ++next_seed;
        pick = seeds[next_seed];
      }
      assigned[static_cast<size_t>(pick)] = 1;
      order.push_back(pick);
      for (int id : dense.samples[static_cast<size_t>(pick)]) {
        if (in_batch[static_cast<size_t>(id)] == m) continue;
        in_batch[static_cast<size_t>(id)] = m;
        for (int p = scored.begin[static_cast<size_t>(id)]; p < scored.begin[static_cast<size_t>(id) + 1]; ++p) {
          const int s = scored.postings[static_cast<size_t>(p)];
          if (assigned[static_cast<size_t>(s)]) continue;
          int& sc = score[static_cast<size_t>(s)];
          if (sc == 0) raised.push_back(s);
          ++sc;
          if (sc >= static_cast<int>(buckets.size())) buckets.resize(static_cast<size_t>(sc) + 1);
          buckets[static_cast<size_t>(sc)].push_back(s);
          top = std::max(top, sc);
        }
      }
    }
  }
  CT_CHECK(static_cast<int>(order.size()) == samples) << order.size() << " of " << samples;
  return order;
}

}  // namespace

StatusOr<Clustering> cluster_samples(const Batch& batch, int micro_batches) {
  const int samples = static_cast<int>(batch.size());
  if (micro_batches < 1 || micro_batches > samples) {
    return Status::invalid_argument("clustering: micro_batches " + std::to_string(micro_batches) + " is not in [1, " +
                                    std::to_string(samples) + "] (the batch's samples)");
  }
  const std::vector<int> sizes = micro_batch_sizes(samples, micro_batches);
  const DenseBatch dense = dense_batch(batch);

  Clustering result;
  std::vector<int> identity(static_cast<size_t>(samples));
  std::iota(identity.begin(), identity.end(), 0);
  result.identity_total_unique = total_unique(dense, identity, sizes);

  std::vector<int> grown = grow_micro_batches(dense, sizes);
  const int64_t grown_total = total_unique(dense, grown, sizes);
  if (grown_total < result.identity_total_unique) {
    result.order = std::move(grown);
    result.total_unique = grown_total;
  } else {
    result.order = std::move(identity);
    result.total_unique = result.identity_total_unique;
  }
  return result;
}

}  // namespace clustertwin::models::nestpipe
