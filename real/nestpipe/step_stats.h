#pragma once

#include <vector>

#include "models/common/status.h"
#include "models/nestpipe/key_stats.h"

namespace clustertwin::nestpipe {

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

}  // namespace clustertwin::nestpipe
