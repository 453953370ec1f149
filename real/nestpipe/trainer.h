#pragma once

// NestPipe's real executor: the task bodies that run a plan of
// models/nestpipe/plans.h on PlanRunner with real data, a real sharded
// embedding store and a real dense model (libtorch, CPU, c10d Gloo).
//
// Batches and steps. A task with Task::batch_offset o works, in runner step
// t, on batch t - kPrologue + o (kPrologue = 2, the largest offset: h2d
// runs two batches ahead). The runner runs steps + kPrologue steps, and a
// task whose batch is outside [0, steps) does nothing:
//
//   runner step     0     1     2     3    ...  steps+1
//   h2d  (+2)       b0    b1    b2    b3         -
//   key_a2a (+1)    -     b0    b1    b2         -
//   dense (0)       -     -     b0    b1         b(steps-1)
//
// so every batch in [0, steps) runs every stage exactly once, in the order
// the plan's dependencies (same step and previous step) impose, and the
// first two runner steps are the pipeline's fill. The trace keeps only the
// tasks that did work (see nestpipe_command.cpp).
//
// One batch b on rank r of W, by cost key (requester: r's side of its own
// batch; owner: r's side of the rows it holds, key mod W == r):
//   h2d            the batch from the BatchSource, copied into "device" tensors
//   key_a2a        requester: dedup (per micro-batch for fwp/nestpipe, after
//                  the clustering order for nestpipe), bucket by owner, All2All
//                  of counts then keys. Owner: decode, and fix the versions the
//                  oracle expects (count of earlier batches holding each key)
//   lookup_gather  owner: rows and versions from the store (host); per
//                  requester (torchrec, fwp), or the union once (dbp, nestpipe,
//                  semisync)
//   lookup_copy    owner: the rows into a device buffer (dbp/nestpipe: the
//                  DualBuffer's Prefetch)
//   dbp_patch      owner: swap, refresh Active's rows that batch b-1 updated
//   emb_a2a_fwd    owner -> requester rows (of micro-batch m under fwp); the
//                  version oracle checks each row served
//   dense_fwd/bwd  requester: the dense model over each micro-batch; a task
//                  that is not per micro-batch loops over the same split
//   emb_a2a_bwd    requester -> owner gradients, reduced in one canonical order
//   emb_update     owner: one optimizer step per batch on the store
//   dense_allreduce  all-reduce of dense gradients / W, dense optimizer step
//
// The canonical reduction that makes torchrec, dbp and fwp bitwise equal:
// per requester, acc_r = 0 + g_0 + g_1 + ... (index_add per micro-batch, in
// order; torchrec on the requester, fwp on the owner), then the owner's
// total = 0 + acc_0 + acc_1 + ... in rank order, then apply_gradients.

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/state_dump.h"
#include "common/status.h"
#include "models/nestpipe/plans.h"
#include "models/spec/recommender.h"
#include "real/core/plan_runner.h"
#include "real/nestpipe/batch_source.h"
#include "real/nestpipe/dual_buffer.h"
#include "real/nestpipe/embedding_store.h"

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::Variant;

// The trainer's per-batch state (trainer_state.h, private to its source files).
struct BatchState;
struct MicroState;

/// The dense part's optimizer, applied once per batch after the all-reduce.
struct DenseOptimizer {
  enum class Kind { kSgd, kAdam };
  Kind kind = Kind::kSgd;
  float lr = 0.01f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // Adam (Kingma and Ba 2015), torch's defaults
};

struct TrainerOptions {
  Variant variant = Variant::kTorchRec;  // not k2dSp
  int steps = 1;                         // batches
  int micro_batches = 1;
  int samples = 1;  // per rank and batch
  spec::RecommenderSpec spec;
  int64_t vocabulary = 0;  // rows of the one shared table
  EmbeddingOptimizer embedding_optimizer;
  DenseOptimizer dense_optimizer;
  bool patch = true;  // false: dbp/nestpipe without the patch (the negative control)
  uint64_t seed = 0;
  /// Where the dense model, the batches, the rows served and the gradients
  /// live (real/core/device.h). On a GPU the batches and rows are copied from
  /// pinned host memory on the copying task's own stream.
  at::Device device = at::kCPU;
  /// The embedding store on `device` instead of in (pinned) host memory.
  bool store_on_device = false;
  /// A test hook (CT_TEST_KILL_RANK_AT_STEP): this rank raises SIGKILL when
  /// its h2d task reaches this batch, with earlier batches still in flight.
  int64_t kill_at_batch = -1;
};

/// The first row the version oracle found stale.
struct StaleRow {
  int64_t batch = 0;
  int64_t key = 0;
  int64_t read = 0;      // the version the served row was read at
  int64_t expected = 0;  // earlier batches that held the key
};

/// One rank's trainer; install() its bodies on a PlanRunner of the plan of
/// `options.variant`, run the runner for runner_steps(), then read the results.
class Trainer {
 public:
  static constexpr int kPrologue = 2;

  /// InvalidArgument for options a run cannot take (variant 2dsp, a model
  /// whose family is not dlrm or hstu, micro-batches not dividing the batch).
  static StatusOr<std::unique_ptr<Trainer>> create(const TrainerOptions& options, std::unique_ptr<BatchSource> source,
                                                   int rank, int world);
  ~Trainer();

  /// Sets a body for every cost key of the NestPipe plans on `runner`.
  void install(real::PlanRunner& runner);
  /// The batches the next run of the runner trains, [begin, end) within
  /// [0, steps]; every batch until set otherwise. A run trains its window
  /// whole, so between windows no batch is in flight: a checkpoint taken
  /// there holds no half-done batch. The split changes no arithmetic: the
  /// rows semisync reads one update late are held across it (held_*_).
  void set_window(int64_t begin, int64_t end);
  int64_t window_end() const { return window_end_; }
  int runner_steps() const { return static_cast<int>(window_end_ - window_begin_) + kPrologue; }
  /// The batch `task` works on in runner step `step`, or nothing when it
  /// has none there (the pipeline's fill and drain).
  std::optional<int64_t> batch_of(const models::Task& task, int64_t step) const;

  /// This rank's loss of each batch (sum over its samples / batch size).
  const std::vector<double>& losses() const { return losses_; }
  int64_t stale_rows() const { return stale_rows_; }
  std::optional<StaleRow> first_stale() const { return first_stale_; }
  int64_t patched_rows() const { return patched_rows_; }
  /// Embedding weights, accumulators and versions, dense parameters and the
  /// dense optimizer's state. Call after the run.
  StateDump state_dump() const;
  /// state_dump() plus what a resumed run needs: the next batch, the
  /// oracle's key counts, the losses and oracle counters so far, and
  /// semisync's held rows. Call between windows.
  StateDump checkpoint_state() const;
  /// Loads checkpoint_state()'s tensors (`file` names them in errors) and
  /// moves the batch source to the next batch; the window then starts there.
  /// InvalidArgument naming the file, the tensor and its shape.
  Status restore_checkpoint(const StateDump& dump, const std::string& file);

 private:
  Trainer(const TrainerOptions& options, std::unique_ptr<BatchSource> source, int rank, int world,
          EmbeddingStore store);

  std::shared_ptr<BatchState> state(int64_t batch);
  void release(int64_t batch);
  bool per_micro() const;
  bool owner_dedup() const;  // rows gathered once for the union (dbp, nestpipe, semisync)

  Status h2d(int64_t b);
  Status key_a2a(real::TaskContext& ctx, int64_t b);
  Status lookup_gather(int64_t b);
  Status lookup_copy(int64_t b);
  Status dbp_patch(int64_t b);
  Status emb_a2a_fwd(real::TaskContext& ctx, int64_t b, int micro);
  Status dense_fwd(int64_t b, int micro);
  Status dense_bwd(int64_t b, int micro);
  Status emb_a2a_bwd(real::TaskContext& ctx, int64_t b, int micro);
  Status emb_update(int64_t b);
  Status dense_allreduce(real::TaskContext& ctx, int64_t b);

  /// The rows owner-side list `list` of requester `r` is served from, with
  /// their read versions and the versions the oracle expects.
  void served_rows(BatchState& s, int r, int list, at::Tensor* rows, at::Tensor* read, at::Tensor* expected);
  void check_versions(int64_t b, const at::Tensor& keys, const at::Tensor& read, const at::Tensor& expected);
  at::Tensor forward_logits(const at::Tensor& dense, const at::Tensor& embeddings);
  /// A host tensor's copy on the device: a clone on the CPU; on a GPU through
  /// pinned memory, asynchronously on the calling thread's stream.
  at::Tensor upload(const at::Tensor& host) const;
  /// An index tensor (host) where the device's tensors can use it: itself on the CPU.
  at::Tensor on_device(const at::Tensor& host) const { return host.to(options_.device); }
  /// float32 on the device.
  at::TensorOptions floats() const { return at::TensorOptions().dtype(at::kFloat).device(options_.device); }
  void step_dense_optimizer(const std::vector<at::Tensor>& grads);
  /// semisync at a window's edge: the rows the window's last update is about
  /// to change, as they are (the next window's first batch reads them).
  Status hold_rows(const at::Tensor& keys);
  /// The held rows and versions in place of the store's, for `keys`.
  void use_held_rows(const at::Tensor& keys, at::Tensor& rows, at::Tensor& versions) const;
  Status restore_dense(const StateDump& dump, const std::string& file);
  Status restore_held(const StateDump& dump, const std::string& file);

  TrainerOptions options_;
  std::unique_ptr<BatchSource> source_;
  int rank_;
  int world_;
  int features_ = 0;  // keys per sample
  int64_t window_begin_ = 0, window_end_ = 0;
  at::Tensor held_keys_, held_rows_, held_versions_;  // semisync: see hold_rows

  // Owner side. The store is read by lookup_gather and dbp_patch and written
  // by emb_update, which DBP lets overlap (lookup of b+1 with the update of
  // b): each call takes the lock, so a row is read whole, before or after an
  // update; the patch then refreshes what was read before.
  EmbeddingStore store_;
  mutable std::shared_mutex store_mutex_;
  std::unique_ptr<DualBuffer> buffer_;  // dbp, nestpipe
  std::vector<int64_t> key_batches_;    // [local row]: batches so far whose keys held the row (key_a2a's order)

  // Requester side.
  torch::nn::AnyModule model_;
  std::vector<at::Tensor> params_;
  std::vector<std::string> param_names_;
  std::vector<at::Tensor> adam_m_, adam_v_;
  int64_t adam_step_ = 0;

  std::mutex states_mutex_;
  std::map<int64_t, std::shared_ptr<BatchState>> states_;

  std::mutex results_mutex_;
  std::vector<double> losses_;
  int64_t stale_rows_ = 0;
  std::optional<StaleRow> first_stale_;
  int64_t patched_rows_ = 0;
};

}  // namespace clustertwin::real::nestpipe
