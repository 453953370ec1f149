#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"

namespace clustertwin::models::nestpipe {

/// The schedules NestPipe is compared with (../shared/papers/nestpipe.md).
///
///   torchrec  TorchRec's sparse-dist pipeline: H2D of i+2 and the key All2All
///             of i+1 overlap the dense work of i; lookup, embedding All2All
///             and update stay on the critical path (synchronous)
///   semisync  the same, but step i's lookup does not wait for step i-1's
///             update: embeddings one step stale (the negative control)
///   dbp       dual-buffer pipelining: batch i+1's rows are gathered and copied
///             into the Prefetch buffer during batch i; after batch i's update
///             the rows both batches share are patched (device to device)
///             before batch i+1 reads them: synchronous again
///   fwp       frozen-window pipelining: the batch's embedding All2All, dense
///             forward/backward and gradient All2All run per micro-batch, so
///             micro-batch m's All2All overlaps micro-batch m-1's compute;
///             one update per batch
///   nestpipe  dbp + fwp + key-centric clustering (smaller micro-batch All2Alls)
///   2dsp      2D sparse parallelism: tables sharded inside groups of G
///             workers, so All2Alls span G workers; after the update, the
///             rows replicas changed are gathered, averaged across the
///             W / G replicas of the shard (an All-Reduce over the workers
///             G apart) and written back before the next lookup (twin only)
enum class Variant { kTorchRec, kSemiSync, kDbp, kFwp, kNestPipe, k2dSp };

std::string_view variant_name(Variant variant);
std::optional<Variant> variant_from_name(std::string_view name);
/// "torchrec, semisync, dbp, fwp, nestpipe, 2dsp", for messages.
std::string variant_list();
std::vector<Variant> all_variants();

/// What one worker moves and computes per training step (one batch), for
/// the plan builder. Bytes are per worker; All2All sizes follow nccl-tests
/// (what a rank sends in total).
struct StepSizes {
  int64_t input_bytes = 0;  // host-to-device copy of the batch (dense features and keys)
  int64_t key_bytes = 0;    // key All2All: the requester's deduplicated key ids
  /// Rows this worker gathers from host memory as owner: after the owner's
  /// dedup over all requesters (dbp, nestpipe) or once per requester
  /// (torchrec, semisync, fwp, 2dsp).
  int64_t owner_rows_dedup = 0;
  int64_t owner_rows_per_requester = 0;
  int64_t row_bytes = 0;                      // embedding dimension x element size
  int64_t emb_a2a_bytes = 0;                  // embedding All2All per direction, whole batch
  int64_t micro_emb_a2a_bytes = 0;            // the same summed over micro-batches (per-micro-batch dedup)
  int64_t clustered_micro_emb_a2a_bytes = 0;  // ... after key-centric clustering
  int64_t patch_rows = 0;                     // DBP: rows shared by consecutive batches (per owner)
  double dense_forward_flops = 0;             // per batch; backward is twice this
  int64_t dense_param_bytes = 0;              // dense gradient All-Reduce
  int sharding_group = 0;                     // 2dsp: All2All group size G (0: all workers)
  /// Requester key lists an owner serves one by one when it does not merge
  /// them (W, or G under 2dsp); the dedup variants merge them into one.
  int64_t lookup_requests = 0;
  /// 2dsp: the rows of this worker's shard that some replica (the same
  /// shard in each of the W / G groups) updated since the last sync, per
  /// step, and the bytes each replica contributes to their average (rows
  /// and optimizer state). 0: no replica sync.
  int64_t replica_sync_rows = 0;
  int64_t replica_sync_bytes = 0;
  /// Per-owner skew of the embedding All2Alls, [owner]: the unique keys a
  /// requester sends each owner over their mean (hot keys make their
  /// owners busier), for the whole batch, an arrival-order micro-batch and
  /// a clustered one (empty: uniform). The owner receives a gradient (and
  /// sends a row) per key, so its link carries share x the mean. With
  /// exact_skew each All2All has these split_bytes; otherwise (the default,
  /// far cheaper to simulate at scale: a uniform exchange is merged into
  /// node flows) every peer is sent the busiest owner's share, which on a
  /// non-blocking fabric ends when the busiest owner's link does.
  std::vector<double> a2a_share, micro_a2a_share, clustered_micro_a2a_share;
  bool exact_skew = false;
};

/// The plan (models/plan/plan.h) of `variant` for one step of one worker,
/// with `micro_batches` micro-batches for the frozen-window variants (fwp,
/// nestpipe; ignored by the others). Cost keys name each task's kind of work
/// so that a profile can price them: h2d, key_a2a, lookup_gather,
/// lookup_copy, emb_a2a_fwd, dense_fwd, dense_bwd, emb_a2a_bwd, emb_update,
/// dense_allreduce, dbp_patch, replica_allreduce (2dsp's sync; its row
/// gather and write-back are priced as lookup_gather and emb_update). Streams: compute, comm, copy, host.
/// InvalidArgument for sizes that cannot make a step (negative, no rows,
/// micro-batches < 1).
StatusOr<models::Plan> build_plan(Variant variant, const StepSizes& sizes, int micro_batches);

}  // namespace clustertwin::models::nestpipe
