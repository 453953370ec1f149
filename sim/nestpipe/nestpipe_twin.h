#pragma once

// NestPipe's twin: the plans of models/nestpipe at any worker count, sized
// from the key statistics of the data, run in SimGrid on a cluster profile,
// and reported as the paper reports them (step time, exposed lookup and
// All2All, speedup over TorchRec, scaling efficiency).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/nestpipe/key_generator.h"
#include "models/nestpipe/plans.h"
#include "models/plan/plan.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim::nestpipe {

/// A NestPipe what-if: the model, its data, and the schedule's knobs. The
/// defaults are the paper's large setting (../shared/papers/nestpipe.md).
struct NestPipeSetup {
  std::string model = "hstu-industrial";  // a shipped spec (models/spec)
  int batch_per_worker = 512;             // the paper's batch
  int micro_batches = 8;                  // FWP's split (micro-batch 64: inside the paper's 16-256)
  double zipf_exponent = 1.05;            // assumption: the usual fit of item popularity
  /// Assumption: a key slot repeats one of the previous batch's with this
  /// probability (the paper gives no figure; it sets DBP's patch size only).
  double batch_overlap = 0.3;
  /// Samples of one user in a worker's batch, arriving interleaved with
  /// other users' (key_generator.h); 0: the model's default
  /// (nestpipe_samples_per_user). A user's samples share
  /// user_shared_fraction of their keys (assumption: the history as of
  /// nearly the same time; the newest 10% of positions differ). Key-centric
  /// clustering gains only where samples share keys
  /// (../shared/papers/nestpipe.md); i.i.d. samples leave it nothing.
  int samples_per_user = 0;
  double user_shared_fraction = 0.9;
  /// The fixed time of one dense forward + backward call, whatever its
  /// size, paid once per micro-batch: kernels x launch latency per dense
  /// layer of the spec (nestpipe_dense_call_overhead). Reconstruction: an
  /// eager HSTU block launches ~13 kernels forward (f1 Linear, SiLU, split,
  /// Q K^T, SiLU, scale, causal mask, x V, x U, LayerNorm, f2 Linear,
  /// residual) and about twice that backward: ~40. Assumption: 5 us per
  /// launch, the usual few microseconds of an eager framework's op.
  int kernels_per_layer = 40;
  double launch_latency_s = 5e-6;
  /// 2dsp: replicas' embedding rows are averaged across the W / G groups
  /// every this many steps (see add_replica_sync).
  int replica_sync_every = 1;
  int sharding_group = 128;  // 2dsp's group G (Meta's 2D sparse parallelism)
  bool clustering = true;    // nestpipe's key-centric clustering (false: micro-batches in arrival order)
  /// The All2Alls' per-owner skew as per-destination sizes (slow to simulate
  /// at scale) instead of the busiest owner's share to every peer (the
  /// default; models/nestpipe/plans.h, StepSizes::a2a_share).
  bool exact_skew = false;
  int64_t samples_to_draw = 1024;  // samples drawn to measure micro-batch dedup (two workers' batches)
  uint64_t seed = 0;
};

/// The samples of one user in a batch: setup.samples_per_user, or when 0
/// the model's default. hstu-industrial: 8 (assumption: the paper gives no
/// figure; 64 users x 8 requests in a batch of 512). Every other shipped
/// model: 1; fuxi-kuairand's 27,285 users spread a step's 128 x 512
/// samples over 128 batches, about one sample per user per batch.
int nestpipe_samples_per_user(const NestPipeSetup& setup);

/// The dense call overhead of the setup's model: dense layers of the spec
/// x kernels_per_layer x launch_latency_s (HSTU, 4 blocks: 0.8 ms).
StatusOr<double> nestpipe_dense_call_overhead(const NestPipeSetup& setup);

/// InvalidArgument naming the field and value ("micro_batches 3: must divide
/// the batch of 512"; a command names its flag instead: cli/nestpipe/setup_flags.h).
Status validate(const NestPipeSetup& setup);

/// The plan of `variant` at `workers` workers: key statistics estimated
/// from the setup (models/nestpipe/key_stats.h; 2dsp's owners are its G
/// workers), step sizes from the spec (models/nestpipe/workload.h).
StatusOr<models::Plan> nestpipe_plan(const NestPipeSetup& setup, models::nestpipe::Variant variant, int workers);

/// The per-worker step sizes behind nestpipe_plan, for a table sharded over
/// `owners` workers (the worker count, or 2dsp's group). The costly part of
/// a plan (key statistics): a sweep computes it once per owner count.
StatusOr<models::nestpipe::StepSizes> nestpipe_step_sizes(const NestPipeSetup& setup, int owners);

/// 2dsp's replica sync in `sizes` (replica_sync_rows, replica_sync_bytes)
/// at `workers` workers. Meta's 2D sparse parallelism keeps W / G replicas
/// of every shard, one per group of G, each trained by its own group's
/// batches; TorchRec's DMPCollection.sync averages them with an All-Reduce
/// across the groups, "called after each train step" (its docstring), and
/// sync every 1 step is the default here. Only rows some replica changed
/// since the last sync can differ, so the twin syncs those (a lower bound
/// on TorchRec's whole-shard All-Reduce, which at 3e9 rows would move the
/// whole 6 TB table every step): the shard's distinct keys among the P x W
/// batches drawn between syncs (models/nestpipe/key_stats.h), per step,
/// with one fp32 of row-wise Adagrad state per row. None when G >= W;
/// InvalidArgument when G does not divide W.
Status add_replica_sync(const NestPipeSetup& setup, int workers, models::nestpipe::StepSizes* sizes);

/// The owners of `variant` at `workers` workers: 2dsp's group, else all.
int nestpipe_owners(const NestPipeSetup& setup, models::nestpipe::Variant variant, int workers);

/// The exposed-time layers the study stacks: dense compute first, then
/// All2All, then lookup (gather, copy to the device, DBP's patch), then the
/// rest (input copy, dense All-Reduce, embedding update, 2dsp's replica All-Reduce;
/// its row gather counts as lookup).
std::vector<BreakdownLayer> nestpipe_breakdown();

/// One (variant, workers) point, in the units the paper uses.
struct NestPipeRow {
  std::string variant;
  int workers = 0;
  double step_ms = 0;
  double qps = 0;                 // samples per second, whole cluster
  double lookup_ms = 0;           // exposed: lookup while neither compute nor All2All runs
  double comm_ms = 0;             // total All2All time (key, embedding, gradient)
  double exposed_comm_ms = 0;     // All2All while no compute runs
  double compute_ms = 0;          // dense forward and backward
  double other_ms = 0;            // the rest of the step (exposed update, All-Reduce, H2D, idle)
  double speedup = 0;             // step time of torchrec / this, same workers (0 without torchrec)
  double scaling_efficiency = 0;  // per-worker throughput / the same variant's at the fewest workers
  double wall_s = 0;              // host time the simulation took
};

/// What to sweep, and how to run each point.
struct NestPipeSweep {
  std::vector<models::nestpipe::Variant> variants;
  std::vector<int> workers;
  /// When not empty: exactly these (variant, workers) points, in this order,
  /// instead of variants x workers (capacity planning asks for scattered points).
  std::vector<std::pair<models::nestpipe::Variant, int>> points;
  int parallel = 2;       // simulations at a time
  SimOptions options;     // steps, warm-up, drain, fidelity, symmetric (workers and trace_out are set per point)
  std::string trace_dir;  // a Perfetto trace per point, named VARIANT-WORKERS.json ("" for none)
  /// Called after each point finishes (in completion order), for progress.
  std::function<void(const NestPipeRow&, int done, int total)> progress;
};

/// The default run of a NestPipe plan: 12 steps, 4 warm-up, 3 drain (the
/// pipelined variants' lookup runs up to two steps ahead), the breakdown.
SimOptions nestpipe_sim_options();

/// Adds the costs the NestPipe plans need and the datasheet cannot give
/// (the embedding update on the host) to a profile that lacks them.
void add_nestpipe_default_costs(cluster::ClusterProfile* profile);

/// Runs every (variant, workers) point; rows in sweep order (variants
/// outer, or the order of `points`), with speedup and scaling efficiency
/// filled in (speedup 0 where torchrec did not run at the same count).
StatusOr<std::vector<NestPipeRow>> run_nestpipe_sweep(const NestPipeSetup& setup,
                                                      const cluster::ClusterProfile& profile,
                                                      const NestPipeSweep& sweep);

/// The rows as a JSON object {"rows": [...]} (deterministic; `extra` holds
/// members to add before "rows", as a JSON object text or "").
std::string nestpipe_rows_json(const std::vector<NestPipeRow>& rows, const std::string& extra = "");
/// The rows as CSV with a header line.
std::string nestpipe_rows_csv(const std::vector<NestPipeRow>& rows);
/// The rows as an aligned table for a terminal.
std::string nestpipe_rows_table(const std::vector<NestPipeRow>& rows);

}  // namespace clustertwin::sim::nestpipe
