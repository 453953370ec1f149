#include "real/nestpipe/exchange.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::Batch;
namespace {

// Sorts by (owner, key) and removes duplicates.
OwnerRuns owner_runs(std::vector<int64_t> keys, int world) {
  const auto by_owner = [world](int64_t a, int64_t b) {
    const int64_t oa = a % world, ob = b % world;
    return oa != ob ? oa < ob : a < b;
  };
  std::sort(keys.begin(), keys.end(), by_owner);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  OwnerRuns runs;
  runs.per_owner.assign(world, 0);
  for (int64_t k : keys)
    ++runs.per_owner[k % world];
  runs.keys = std::move(keys);
  return runs;
}

// The index of `key` in `runs` (which must hold it).
int64_t index_in(const OwnerRuns& runs, int64_t key, int world) {
  const auto by_owner = [world](int64_t a, int64_t b) {
    const int64_t oa = a % world, ob = b % world;
    return oa != ob ? oa < ob : a < b;
  };
  return std::lower_bound(runs.keys.begin(), runs.keys.end(), key, by_owner) - runs.keys.begin();
}

// The index of every element of `part` (ascending) in `whole` (ascending, a superset).
std::vector<int64_t> positions(const std::vector<int64_t>& part, const std::vector<int64_t>& whole) {
  std::vector<int64_t> out(part.size());
  size_t j = 0;
  for (size_t i = 0; i < part.size(); ++i) {
    while (whole[j] != part[i])
      ++j;
    out[i] = static_cast<int64_t>(j);
  }
  return out;
}

}  // namespace

StatusOr<RequesterExchange> plan_requester(const Batch& batch, std::span<const int> order, int micro_batches,
                                           int world) {
  const int samples = static_cast<int>(batch.size());
  if (world < 1) return Status::invalid_argument("key exchange: world " + std::to_string(world) + ": must be >= 1");
  if (micro_batches < 1 || samples % micro_batches != 0) {
    return Status::invalid_argument("key exchange: " + std::to_string(micro_batches) +
                                    " micro-batches do not divide a batch of " + std::to_string(samples));
  }
  std::vector<int> identity;
  if (order.empty()) {
    identity.resize(samples);
    std::iota(identity.begin(), identity.end(), 0);
    order = identity;
  }
  if (static_cast<int>(order.size()) != samples) {
    return Status::invalid_argument("key exchange: the sample order has " + std::to_string(order.size()) +
                                    " entries for " + std::to_string(samples) + " samples");
  }
  std::vector<char> seen(samples, 0);
  for (int j : order) {
    if (j < 0 || j >= samples || seen[j]) {
      return Status::invalid_argument("key exchange: the sample order is not a permutation (entry " +
                                      std::to_string(j) + ")");
    }
    seen[j] = 1;
  }
  RequesterExchange out;
  out.world = world;
  out.features = samples > 0 ? static_cast<int>(batch[0].size()) : 0;
  std::vector<int64_t> all;
  for (int j = 0; j < samples; ++j) {
    if (static_cast<int>(batch[j].size()) != out.features) {
      return Status::invalid_argument("key exchange: sample " + std::to_string(j) + " has " +
                                      std::to_string(batch[j].size()) + " keys, sample 0 has " +
                                      std::to_string(out.features));
    }
    for (int64_t k : batch[j]) {
      if (k < 0)
        return Status::invalid_argument("key exchange: sample " + std::to_string(j) + ": negative key " +
                                        std::to_string(k));
      all.push_back(k);
    }
  }
  out.batch = owner_runs(all, world);
  const int per_micro = samples / micro_batches;
  for (int m = 0; m < micro_batches; ++m) {
    std::vector<int64_t> sample_ids(order.begin() + m * per_micro, order.begin() + (m + 1) * per_micro);
    std::vector<int64_t> keys;
    for (int64_t j : sample_ids)
      keys.insert(keys.end(), batch[j].begin(), batch[j].end());
    OwnerRuns runs = owner_runs(keys, world);
    std::vector<int64_t> inverse(keys.size());
    for (size_t i = 0; i < keys.size(); ++i)
      inverse[i] = index_in(runs, keys[i], world);
    std::vector<int64_t> in_batch(runs.keys.size());
    for (size_t i = 0; i < runs.keys.size(); ++i)
      in_batch[i] = index_in(out.batch, runs.keys[i], world);
    out.samples.push_back(std::move(sample_ids));
    out.inverse.push_back(std::move(inverse));
    out.micro_in_batch.push_back(std::move(in_batch));
    out.micro.push_back(std::move(runs));
  }
  return out;
}

KeyMessage key_message(const RequesterExchange& r, int lists) {
  KeyMessage msg;
  msg.counts.assign(static_cast<size_t>(r.world) * lists, 0);
  msg.keys_per_owner.assign(r.world, 0);
  // Every run list is sorted by owner, so owner o's keys of a list start
  // where the counts of owners < o end.
  std::vector<const OwnerRuns*> runs;
  if (lists == 1) {
    runs.push_back(&r.batch);
  } else {
    for (const OwnerRuns& m : r.micro)
      runs.push_back(&m);
  }
  std::vector<std::vector<int64_t>> starts(runs.size());
  for (size_t l = 0; l < runs.size(); ++l) {
    starts[l].assign(r.world + 1, 0);
    for (int o = 0; o < r.world; ++o)
      starts[l][o + 1] = starts[l][o] + runs[l]->per_owner[o];
  }
  for (int o = 0; o < r.world; ++o) {
    for (size_t l = 0; l < runs.size(); ++l) {
      const int64_t n = runs[l]->per_owner[o];
      msg.counts[o * lists + l] = n;
      msg.keys_per_owner[o] += n;
      msg.keys.insert(msg.keys.end(), runs[l]->keys.begin() + starts[l][o], runs[l]->keys.begin() + starts[l][o] + n);
    }
  }
  return msg;
}

StatusOr<OwnerExchange> plan_owner(std::span<const int64_t> counts, std::span<const int64_t> keys, int lists, int world,
                                   int rank) {
  const std::string where = "key exchange: owner " + std::to_string(rank) + " of " + std::to_string(world) + ": ";
  if (lists < 1 || static_cast<int64_t>(counts.size()) != static_cast<int64_t>(world) * lists) {
    return Status::internal(where + std::to_string(counts.size()) + " counts for " + std::to_string(world) +
                            " requesters x " + std::to_string(lists) + " lists");
  }
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0) return Status::internal(where + "negative count " + std::to_string(c));
    total += c;
  }
  if (total != static_cast<int64_t>(keys.size())) {
    return Status::internal(where + "counts sum to " + std::to_string(total) + ", received " +
                            std::to_string(keys.size()) + " keys");
  }
  OwnerExchange out;
  out.world = world;
  out.lists = lists;
  out.list_keys.resize(world);
  out.requester_keys.resize(world);
  size_t at = 0;
  for (int r = 0; r < world; ++r) {
    std::vector<int64_t> merged;
    for (int l = 0; l < lists; ++l) {
      const int64_t n = counts[r * lists + l];
      std::vector<int64_t> list(keys.begin() + at, keys.begin() + at + n);
      at += n;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i] % world != rank || (i > 0 && list[i - 1] >= list[i])) {
          return Status::internal(where + "requester " + std::to_string(r) + " list " + std::to_string(l) + ": key " +
                                  std::to_string(list[i]) + " is not this owner's or not ascending");
        }
      }
      merged.insert(merged.end(), list.begin(), list.end());
      out.list_keys[r].push_back(std::move(list));
    }
    std::sort(merged.begin(), merged.end());
    merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    out.requester_keys[r] = std::move(merged);
  }
  for (const auto& req : out.requester_keys)
    out.union_keys.insert(out.union_keys.end(), req.begin(), req.end());
  std::sort(out.union_keys.begin(), out.union_keys.end());
  out.union_keys.erase(std::unique(out.union_keys.begin(), out.union_keys.end()), out.union_keys.end());
  out.requester_in_union.resize(world);
  out.list_in_requester.resize(world);
  for (int r = 0; r < world; ++r) {
    out.requester_in_union[r] = positions(out.requester_keys[r], out.union_keys);
    for (const auto& list : out.list_keys[r])
      out.list_in_requester[r].push_back(positions(list, out.requester_keys[r]));
  }
  return out;
}

}  // namespace clustertwin::real::nestpipe
