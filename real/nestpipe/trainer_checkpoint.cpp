// The trainer's state as tensors: the state dump that runs are compared by
// (--dump-state), and the checkpoint a resumed run continues from bit for
// bit (--checkpoint-dir, real/core/checkpoint.h).
//
// A checkpoint is taken between windows (Trainer::set_window), where no
// batch is in flight, so it holds no exchange, no gathered row and nothing
// of the dual buffer: the next window's first batch gathers its rows from
// the store (semisync excepted: its held rows). Nothing draws random
// numbers while training (batches are computed from their index, rows and
// the dense model from the seed), so there is no generator state to keep.

#include <algorithm>

#include "common/check.h"
#include "real/core/state_tensors.h"
#include "real/nestpipe/trainer.h"
#include "real/nestpipe/trainer_state.h"

namespace clustertwin::real::nestpipe {

StateDump Trainer::state_dump() const {
  StateDump d;
  d.rank = rank_;
  d.world = world_;
  d.tensors.push_back(dump_tensor("embedding.weights", store_.weights()));
  d.tensors.push_back(dump_tensor("embedding.accumulators", store_.accumulators()));
  const at::Tensor keys = at::arange(store_.local_rows(), at::kLong) * world_ + rank_;
  auto versions = store_.versions(keys);
  CT_CHECK(versions.is_ok()) << versions.status().message();
  d.tensors.push_back(dump_tensor("embedding.versions", *versions));
  for (size_t i = 0; i < params_.size(); ++i)
    d.tensors.push_back(dump_tensor("dense." + param_names_[i], params_[i]));
  if (options_.dense_optimizer.kind == DenseOptimizer::Kind::kAdam) {
    d.tensors.push_back(dump_tensor("adam.step", at::full({1}, adam_step_, at::kLong)));
    for (size_t i = 0; i < adam_m_.size(); ++i) {
      d.tensors.push_back(dump_tensor("adam.exp_avg." + param_names_[i], adam_m_[i]));
      d.tensors.push_back(dump_tensor("adam.exp_avg_sq." + param_names_[i], adam_v_[i]));
    }
  }
  return d;
}

StateDump Trainer::checkpoint_state() const {
  StateDump d = state_dump();
  d.tensors.push_back(dump_tensor("data.next_batch", at::full({1}, window_end_, at::kLong)));
  d.tensors.push_back(dump_tensor("oracle.key_batches", long_tensor(key_batches_)));
  const std::vector<double> losses(losses_.begin(), losses_.begin() + window_end_);
  d.tensors.push_back(dump_tensor("results.losses", at::tensor(losses, at::kDouble)));
  const StaleRow first = first_stale_.value_or(StaleRow{});
  d.tensors.push_back(
      dump_tensor("results.counters", long_tensor({stale_rows_, patched_rows_, first_stale_ ? 1 : 0, first.batch,
                                                   first.key, first.read, first.expected})));
  if (options_.variant == Variant::kSemiSync) {
    const int64_t dim = options_.spec.embedding_dim;
    const bool held = held_keys_.defined();
    d.tensors.push_back(dump_tensor("held.keys", held ? held_keys_ : at::zeros({0}, at::kLong)));
    d.tensors.push_back(dump_tensor("held.rows", held ? held_rows_ : at::zeros({0, dim}, at::kFloat)));
    d.tensors.push_back(dump_tensor("held.versions", held ? held_versions_ : at::zeros({0}, at::kLong)));
  }
  return d;
}

Status Trainer::restore_dense(const StateDump& dump, const std::string& file) {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto p = restore_tensor(dump, file, "dense." + param_names_[i], at::kFloat, params_[i].sizes());
    if (!p.is_ok()) return p.status();
    params_[i].copy_(*p);
  }
  if (options_.dense_optimizer.kind != DenseOptimizer::Kind::kAdam) return Status::ok();
  auto step = restore_tensor(dump, file, "adam.step", at::kLong, {1});
  if (!step.is_ok()) return step.status();
  adam_step_ = step->item<int64_t>();
  adam_m_.clear();
  adam_v_.clear();
  for (size_t i = 0; i < params_.size() && adam_step_ > 0; ++i) {
    auto m = restore_tensor(dump, file, "adam.exp_avg." + param_names_[i], at::kFloat, params_[i].sizes());
    if (!m.is_ok()) return m.status();
    auto v = restore_tensor(dump, file, "adam.exp_avg_sq." + param_names_[i], at::kFloat, params_[i].sizes());
    if (!v.is_ok()) return v.status();
    adam_m_.push_back(m->to(params_[i].device()));
    adam_v_.push_back(v->to(params_[i].device()));
  }
  return Status::ok();
}

Status Trainer::restore_held(const StateDump& dump, const std::string& file) {
  const int64_t n = dump_leading_dim(dump, "held.keys");
  auto keys = restore_tensor(dump, file, "held.keys", at::kLong, {n});
  if (!keys.is_ok()) return keys.status();
  auto rows = restore_tensor(dump, file, "held.rows", at::kFloat, {n, options_.spec.embedding_dim});
  if (!rows.is_ok()) return rows.status();
  auto versions = restore_tensor(dump, file, "held.versions", at::kLong, {n});
  if (!versions.is_ok()) return versions.status();
  held_keys_ = *keys;
  held_rows_ = rows->to(store_.device());
  held_versions_ = *versions;
  return Status::ok();
}

Status Trainer::restore_checkpoint(const StateDump& dump, const std::string& file) {
  if (dump.rank != rank_ || dump.world != world_) {
    return Status::invalid_argument(file + ": rank " + std::to_string(dump.rank) + " of " + std::to_string(dump.world) +
                                    ", this is rank " + std::to_string(rank_) + " of " + std::to_string(world_));
  }
  auto next = restore_tensor(dump, file, "data.next_batch", at::kLong, {1});
  if (!next.is_ok()) return next.status();
  const int64_t n = next->item<int64_t>();
  if (n < 0 || n > options_.steps) {
    return Status::invalid_argument("steps " + std::to_string(options_.steps) + ": fewer than the " +
                                    std::to_string(n) + " batches " + file + " has trained");
  }
  const int64_t rows = store_.local_rows();
  auto weights = restore_tensor(dump, file, "embedding.weights", at::kFloat, store_.weights().sizes());
  auto accumulators = restore_tensor(dump, file, "embedding.accumulators", at::kFloat, {rows});
  auto versions = restore_tensor(dump, file, "embedding.versions", at::kLong, {rows});
  auto key_batches = restore_tensor(dump, file, "oracle.key_batches", at::kLong, {rows});
  auto losses = restore_tensor(dump, file, "results.losses", at::kDouble, {n});
  auto counters = restore_tensor(dump, file, "results.counters", at::kLong, {7});
  for (const auto* t : {&weights, &accumulators, &versions, &key_batches, &losses, &counters})
    if (!t->is_ok()) return t->status();
  CT_RETURN_IF_ERROR(store_.restore(*weights, *accumulators, *versions).with_context(file));
  CT_RETURN_IF_ERROR(restore_dense(dump, file));
  std::copy_n(key_batches->data_ptr<int64_t>(), rows, key_batches_.begin());
  std::copy_n(losses->data_ptr<double>(), n, losses_.begin());
  const int64_t* c = counters->data_ptr<int64_t>();
  stale_rows_ = c[0];
  patched_rows_ = c[1];
  first_stale_ = c[2] ? std::optional<StaleRow>(StaleRow{c[3], c[4], c[5], c[6]}) : std::nullopt;
  if (options_.variant == Variant::kSemiSync) {
    CT_RETURN_IF_ERROR(restore_held(dump, file));
  }
  CT_RETURN_IF_ERROR(source_->skip_to(n));
  set_window(n, n);
  return Status::ok();
}

}  // namespace clustertwin::real::nestpipe
