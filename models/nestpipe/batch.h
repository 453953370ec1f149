#pragma once

// A worker's batch of sparse keys, and how it splits into micro-batches:
// what the key statistics (key_stats.h) and the clustering (clustering.h)
// both take, so that neither includes the other's file.

#include <cstdint>
#include <vector>

namespace clustertwin::models::nestpipe {

/// The sparse keys of one sample, and a worker's batch of samples.
using SampleKeys = std::vector<int64_t>;
using Batch = std::vector<SampleKeys>;

/// The sizes of a split of `samples` into `micro_batches` consecutive
/// micro-batches: equal, and when they cannot be, the first `samples mod
/// micro_batches` are one larger. Requires 1 <= micro_batches <= samples.
std::vector<int> micro_batch_sizes(int samples, int micro_batches);

}  // namespace clustertwin::models::nestpipe
