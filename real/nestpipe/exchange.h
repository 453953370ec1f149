#pragma once

// The bookkeeping of NestPipe's key and row All2Alls, with no torch in it:
// which keys a requester sends each owner, in which order, and where every
// row lands on both sides. The trainer (trainer.h) turns these index lists
// into tensors.
//
// The one order everything uses: keys sorted by (owner, key), owner = key
// mod W. A requester's unique keys then form one contiguous run per owner,
// so the run is exactly what it sends that owner, and the rows that come
// back (owners in rank order, each in the order it was asked) line up with
// the requester's list without any permutation:
//
//   requester keys {9, 2, 4, 7, 2}, W = 2
//   batch list     2 4 | 7 9      sorted by (owner, key)
//                  ---   ---
//              owner 0   owner 1
//
// Micro-batches (FWP) are deduplicated on their own; the batch list is the
// union of theirs. An owner receives, per requester, one list per
// micro-batch (or one per batch), ascending, and deduplicates them into
// the requester's batch list and the union over requesters (DBP's
// owner-side dedup).

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "models/nestpipe/key_stats.h"

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::Batch;

/// Unique keys sorted by (key mod world, key), with how many go to each owner.
struct OwnerRuns {
  std::vector<int64_t> keys;
  std::vector<int64_t> per_owner;  // [world]; sums to keys.size()
};

/// A requester's view of one batch of `samples` samples x `features` keys.
struct RequesterExchange {
  int world = 1;
  int features = 0;                                  // keys per sample
  OwnerRuns batch;                                   // the batch's unique keys
  std::vector<OwnerRuns> micro;                      // [m]: micro-batch m's unique keys
  std::vector<std::vector<int64_t>> samples;         // [m]: the batch's sample indices in micro-batch m, in order
  std::vector<std::vector<int64_t>> inverse;         // [m][j * features + f]: index in micro[m].keys
  std::vector<std::vector<int64_t>> micro_in_batch;  // [m][i]: index of micro[m].keys[i] in batch.keys
};

/// Splits `batch` (every sample with the same number of keys) into
/// `micro_batches` equal micro-batches in the sample order `order` (empty:
/// the identity; else a permutation, e.g. cluster_samples' order) and
/// deduplicates the batch and every micro-batch. InvalidArgument when the
/// micro-batches do not divide the batch, the order is not a permutation,
/// samples differ in key count, or a key is negative.
StatusOr<RequesterExchange> plan_requester(const Batch& batch, std::span<const int> order, int micro_batches,
                                           int world);

/// What a requester sends in the key All2All when it sends `lists` lists
/// per owner (1: the batch list; the number of micro-batches: one per
/// micro-batch): counts [owner * lists + l], then the keys, owner-major,
/// list by list. `lists` must be 1 or micro.size().
struct KeyMessage {
  std::vector<int64_t> counts;          // [world * lists]
  std::vector<int64_t> keys;            // flat
  std::vector<int64_t> keys_per_owner;  // [world]: the All2All's send splits
};
KeyMessage key_message(const RequesterExchange& requester, int lists);

/// An owner's view of one batch: what every requester asked of it.
struct OwnerExchange {
  int world = 1;
  int lists = 1;
  std::vector<int64_t> union_keys;                           // ascending, over all requesters
  std::vector<std::vector<int64_t>> requester_keys;          // [r]: r's batch list (ascending)
  std::vector<std::vector<int64_t>> requester_in_union;      // [r][i]: index of requester_keys[r][i] in union_keys
  std::vector<std::vector<std::vector<int64_t>>> list_keys;  // [r][l]: list l of r, ascending
  std::vector<std::vector<std::vector<int64_t>>> list_in_requester;  // [r][l][i]: index in requester_keys[r]
};

/// Decodes what owner `rank` of `world` received: `counts` [requester *
/// lists + l] and the keys, requester-major. Internal (a bug, or ranks that
/// disagree on the protocol) when the sizes disagree, a key is not this
/// owner's, or a list is not strictly ascending.
StatusOr<OwnerExchange> plan_owner(std::span<const int64_t> counts, std::span<const int64_t> keys, int lists, int world,
                                   int rank);

}  // namespace clustertwin::real::nestpipe
