#pragma once

#include "common/status.h"
#include "models/nestpipe/key_stats.h"
#include "models/nestpipe/plans.h"
#include "models/spec/recommender.h"

namespace clustertwin::models::nestpipe {

/// A NestPipe training run as the plans see it: the model, the batch, and
/// the key statistics of its data at this worker count.
struct Workload {
  const spec::RecommenderSpec* spec = nullptr;
  int batch_per_worker = 512;  // the paper's batch
  int micro_batches = 8;       // FWP's split
  int element_bytes = 4;       // embedding rows and dense gradients in fp32
  int sharding_group = 0;      // 2dsp's group (0: all workers)
};

/// The per-worker step sizes of `workload` given the key statistics `keys`
/// (models/nestpipe/key_stats.h) of the same worker count:
///
///   input        batch x (dense features x 4 B + lookups x 8 B key ids)
///   key All2All  the requester's unique keys x 8 B
///   owner rows   mean over owners of unique_per_owner (after the owner's
///                dedup) or of W x unique_per_pair (one dedup per requester)
///   emb All2All  the requester's unique keys x row bytes (the rows it
///                receives, and the gradients it sends back)
///   micro        mean unique keys per micro-batch x micro-batches x row bytes,
///                identity split and after clustering
///   patch        mean over owners of patch_per_owner
///   requests     the requester lists an owner serves one by one: W (G under 2dsp)
///   dense        forward FLOPs per sample x batch; gradients dense params x 4 B
///
/// InvalidArgument when the spec is missing or the statistics do not belong
/// to the workload (worker count, micro-batches).
StatusOr<StepSizes> step_sizes(const Workload& workload, const KeyStatsSummary& keys);

}  // namespace clustertwin::models::nestpipe
