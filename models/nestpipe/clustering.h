#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "models/nestpipe/batch.h"

namespace clustertwin::models::nestpipe {

/// A reordering of a batch's samples into micro-batches.
struct Clustering {
  /// A permutation of 0..samples-1: micro-batch m holds the next
  /// micro_batch_sizes(samples, N)[m] entries of `order`.
  std::vector<int> order;
  int64_t total_unique = 0;           // sum over micro-batches of their unique keys, in `order`
  int64_t identity_total_unique = 0;  // the same for the batch's own order
};

/// NestPipe's key-centric sample clustering: reorders `batch` into
/// `micro_batches` micro-batches (sizes from micro_batch_sizes) so that
/// samples sharing keys land together. FWP deduplicates per micro-batch,
/// so the sum over micro-batches of their unique keys is what its key and
/// embedding All2Alls carry; clustering lowers that sum and changes nothing
/// else (the batch's gradient is the same sum over the same samples).
///
/// The algorithm: grow one micro-batch at a time. Seed it with the
/// unassigned sample holding the most shared keys, then repeatedly add the
/// unassigned sample that overlaps the micro-batch's key set most (it adds
/// the fewest new keys: the exact greedy step for this objective) until the
/// micro-batch is full. Overlaps are kept up to date through an inverted
/// index (key -> samples), so a step costs the posting lists of the keys it
/// adds, and the whole run O(T x min(N, f)) for T key occurrences, N
/// micro-batches and key frequency f; keys held by more than half the
/// samples are left out of the scores, as they land in nearly every
/// micro-batch whatever the order. Seeds are taken by shared-key count,
/// then index; among samples of equal overlap the one whose overlap rose
/// last wins (a bucket queue), so the result is deterministic.
///
/// Why not the online greedy (each sample, in turn, to the micro-batch it
/// overlaps most)? On i.i.d. Zipf batches it removed 0-4% of the duplicate
/// keys where growth removes 9-26%: early samples, spread over empty
/// micro-batches, seed N weak clusters instead of one strong one at a time.
///
/// Greedy growth can lose to the batch's own order on adversarial inputs
/// (the last micro-batch takes the leftovers), so the result is compared
/// with the identity split and the better of the two is returned: never
/// more unique keys than the identity order.
///
/// InvalidArgument when micro_batches is not in [1, samples].
StatusOr<Clustering> cluster_samples(const Batch& batch, int micro_batches);

}  // namespace clustertwin::models::nestpipe
