// The trainer's setup and its sparse side: data, key routing, lookup, the
// dual buffer, the embedding All2Alls and the update. The dense side is in
// trainer_dense.cpp.

#include "real/nestpipe/trainer.h"

#include <csignal>
#include <unordered_map>

#include "common/check.h"
#include "models/nestpipe/clustering.h"
#include "models/torch/recommender.h"
#include "real/core/device.h"
#include "real/nestpipe/trainer_state.h"

namespace clustertwin::real::nestpipe {

using clustertwin::models::nestpipe::cluster_samples;
using clustertwin::models::nestpipe::SampleKeys;
using clustertwin::models::nestpipe::Variant;
namespace {

// Keys per sample the model looks up: one per table for DLRM, the sequence
// plus the target item for HSTU.
int features_of(const spec::RecommenderSpec& spec) {
  if (spec.family == "hstu") return spec.sequence_length + 1;
  return static_cast<int>(spec.tables.size());
}

}  // namespace

Trainer::Trainer(const TrainerOptions& options, std::unique_ptr<BatchSource> source, int rank, int world,
                 EmbeddingStore store)
    : options_(options), source_(std::move(source)), rank_(rank), world_(world), store_(std::move(store)) {}

Trainer::~Trainer() = default;

StatusOr<std::unique_ptr<Trainer>> Trainer::create(const TrainerOptions& options, std::unique_ptr<BatchSource> source,
                                                   int rank, int world) {
  if (options.variant == Variant::k2dSp) {
    return Status::invalid_argument("variant 2dsp: the real executor does not run 2D sparse parallelism");
  }
  if (options.micro_batches < 1 || options.samples % options.micro_batches != 0) {
    return Status::invalid_argument("micro_batches " + std::to_string(options.micro_batches) +
                                    ": must divide samples " + std::to_string(options.samples));
  }
  if (options.spec.family != "dlrm" && options.spec.family != "hstu") {
    return Status::invalid_argument("spec " + options.spec.name + ": family " + options.spec.family +
                                    " has no dense module (allowed: dlrm, hstu)");
  }
  EmbeddingStoreOptions store;
  store.rows = options.vocabulary;
  store.dim = options.spec.embedding_dim;
  store.rank = rank;
  store.world = world;
  store.seed = options.seed;
  store.optimizer = options.embedding_optimizer;
  store.device = options.store_on_device ? options.device : at::Device(at::kCPU);
  store.pinned = options.device.is_cuda() && !options.store_on_device;
  auto created = EmbeddingStore::create(store);
  if (!created.is_ok()) return created.status();
  std::unique_ptr<Trainer> t(new Trainer(options, std::move(source), rank, world, std::move(*created)));
  t->features_ = features_of(options.spec);
  t->key_batches_.assign(t->store_.local_rows(), 0);
  if (options.variant == Variant::kDbp || options.variant == Variant::kNestPipe) {
    DualBufferOptions buffer;
    buffer.device = options.device;
    buffer.patch_enabled = options.patch;
    t->buffer_ = std::make_unique<DualBuffer>(store.dim, buffer);
  }
  auto model = models::nets::make_dense_model(options.spec, options.seed);
  if (!model.is_ok()) return model.status();
  t->model_ = std::move(*model);
  t->model_.ptr()->to(options.device);
  for (const auto& p : t->model_.ptr()->named_parameters()) {
    t->param_names_.push_back(p.key());
    t->params_.push_back(p.value());
  }
  t->losses_.assign(options.steps, 0.0);
  t->window_end_ = options.steps;
  return t;
}

bool Trainer::per_micro() const {
  return options_.variant == Variant::kFwp || options_.variant == Variant::kNestPipe;
}

bool Trainer::owner_dedup() const {
  return options_.variant == Variant::kDbp || options_.variant == Variant::kNestPipe ||
         options_.variant == Variant::kSemiSync;
}

std::optional<int64_t> Trainer::batch_of(const models::Task& task, int64_t step) const {
  const int64_t b = window_begin_ + step - kPrologue + task.batch_offset;
  if (b < window_begin_ || b >= window_end_) return std::nullopt;
  return b;
}

void Trainer::set_window(int64_t begin, int64_t end) {
  CT_CHECK(0 <= begin && begin <= end && end <= options_.steps) << begin << ".." << end << " of " << options_.steps;
  window_begin_ = begin;
  window_end_ = end;
  std::lock_guard<std::mutex> lock(states_mutex_);
  states_.clear();  // what the last window's edge left: no later batch reads it
}

std::shared_ptr<BatchState> Trainer::state(int64_t batch) {
  std::lock_guard<std::mutex> lock(states_mutex_);
  auto& s = states_[batch];
  if (!s) s = std::make_shared<BatchState>();
  return s;
}

// A batch's state goes once its last readers are done: the update and the
// dense all-reduce, and under DBP the patch of the next batch (which reads
// the keys this batch updated).
void Trainer::release(int64_t batch) {
  const int needed = buffer_ ? 3 : 2;
  std::lock_guard<std::mutex> lock(states_mutex_);
  auto it = states_.find(batch);
  if (it != states_.end() && ++it->second->released == needed) states_.erase(it);
}

void Trainer::install(real::PlanRunner& runner) {
  using Body = std::function<Status(real::TaskContext&, int64_t)>;
  auto add = [&](const std::string& key, Body body) {
    runner.set_body(key, [this, body](real::TaskContext& ctx) -> Status {
      const std::optional<int64_t> b = batch_of(ctx.task, ctx.step);
      if (!b) return Status::ok();
      try {
        return body(ctx, *b).with_context("rank " + std::to_string(rank_) + ": task '" + ctx.task.name + "' of batch " +
                                          std::to_string(*b));
      } catch (const std::exception& e) {
        std::string what = e.what();
        what = what.substr(0, what.find('\n'));  // c10::Error appends a backtrace
        return Status::internal("rank " + std::to_string(rank_) + ": task '" + ctx.task.name + "' of batch " +
                                std::to_string(*b) + ": " + what);
      }
    });
  };
  add("h2d", [this](real::TaskContext&, int64_t b) { return h2d(b); });
  add("key_a2a", [this](real::TaskContext& ctx, int64_t b) { return key_a2a(ctx, b); });
  add("lookup_gather", [this](real::TaskContext&, int64_t b) { return lookup_gather(b); });
  add("lookup_copy", [this](real::TaskContext&, int64_t b) { return lookup_copy(b); });
  add("dbp_patch", [this](real::TaskContext&, int64_t b) { return dbp_patch(b); });
  add("emb_a2a_fwd", [this](real::TaskContext& ctx, int64_t b) { return emb_a2a_fwd(ctx, b, ctx.task.micro_batch); });
  add("dense_fwd", [this](real::TaskContext& ctx, int64_t b) { return dense_fwd(b, ctx.task.micro_batch); });
  add("dense_bwd", [this](real::TaskContext& ctx, int64_t b) { return dense_bwd(b, ctx.task.micro_batch); });
  add("emb_a2a_bwd", [this](real::TaskContext& ctx, int64_t b) { return emb_a2a_bwd(ctx, b, ctx.task.micro_batch); });
  add("emb_update", [this](real::TaskContext&, int64_t b) { return emb_update(b); });
  add("dense_allreduce", [this](real::TaskContext& ctx, int64_t b) { return dense_allreduce(ctx, b); });
}

Status Trainer::h2d(int64_t b) {
  if (b == options_.kill_at_batch) std::raise(SIGKILL);
  auto batch = source_->next(b);
  if (!batch.is_ok()) return batch.status();
  const int64_t samples = static_cast<int64_t>(batch->keys.size());
  if (samples != options_.samples) {
    return Status::internal("batch source gave " + std::to_string(samples) + " samples, want " +
                            std::to_string(options_.samples));
  }
  for (const SampleKeys& keys : batch->keys) {
    if (static_cast<int>(keys.size()) != features_) {
      return Status::invalid_argument("a sample has " + std::to_string(keys.size()) + " keys, --model " +
                                      options_.spec.name + " looks up " + std::to_string(features_));
    }
  }
  auto s = state(b);
  s->host = std::move(*batch);
  const int64_t dense_features = options_.spec.dense_features;
  // The copies to the device (on the CPU: separate tensors, as a GPU's would be).
  s->dense = upload(at::from_blob(s->host.dense.data(), {samples, dense_features}, at::kFloat));
  s->labels = upload(at::from_blob(s->host.labels.data(), {samples}, at::kFloat));
  return Status::ok();
}

at::Tensor Trainer::upload(const at::Tensor& host) const {
  if (options_.device.is_cpu()) return host.clone();
  at::Tensor pinned = at::empty(host.sizes(), host.options().pinned_memory(true));
  pinned.copy_(host);
  return pinned.to(options_.device, /*non_blocking=*/true);
}

Status Trainer::key_a2a(real::TaskContext& ctx, int64_t b) {
  auto s = state(b);
  const int n = options_.micro_batches;
  std::vector<int> order;
  if (options_.variant == Variant::kNestPipe) {
    auto clustering = cluster_samples(s->host.keys, n);
    if (!clustering.is_ok()) return clustering.status();
    order = std::move(clustering->order);
  }
  auto requester = plan_requester(s->host.keys, order, n, world_);
  if (!requester.is_ok()) return requester.status();
  s->requester = std::move(*requester);
  s->micro.resize(n);
  for (int m = 0; m < n; ++m) {
    s->micro[m].samples = on_device(long_tensor(s->requester.samples[m]));
    s->micro[m].inverse = on_device(long_tensor(s->requester.inverse[m]));
    s->micro[m].in_batch = on_device(long_tensor(s->requester.micro_in_batch[m]));
  }

  // Counts first, so that every owner can size what it receives.
  const int lists = per_micro() ? n : 1;
  const KeyMessage message = key_message(s->requester, lists);
  at::Tensor send_counts = long_tensor(message.counts);
  at::Tensor recv_counts = at::empty({world_ * lists}, at::kLong);
  CT_RETURN_IF_ERROR(ctx.comm.all_to_all(*ctx.group, recv_counts, send_counts));
  const std::vector<int64_t> counts(recv_counts.data_ptr<int64_t>(), recv_counts.data_ptr<int64_t>() + world_ * lists);
  std::vector<int64_t> recv_splits(world_, 0);
  for (int r = 0; r < world_; ++r)
    for (int l = 0; l < lists; ++l)
      recv_splits[r] += counts[r * lists + l];
  int64_t total = 0;
  for (int64_t c : recv_splits)
    total += c;
  at::Tensor send_keys = long_tensor(message.keys);
  at::Tensor recv_keys = at::empty({total}, at::kLong);
  CT_RETURN_IF_ERROR(ctx.comm.all_to_all(*ctx.group, recv_keys, send_keys, recv_splits, message.keys_per_owner));
  auto owner = plan_owner(counts, std::span<const int64_t>(recv_keys.data_ptr<int64_t>(), total), lists, world_, rank_);
  if (!owner.is_ok()) return owner.status();
  s->owner = std::move(*owner);
  const OwnerExchange& o = s->owner;
  s->union_keys = long_tensor(o.union_keys);

  // The oracle's expectation: a row's version is the number of updates that
  // touched it, and every batch holding a key updates it once. key_a2a runs
  // on one stream in batch order, so the count is that of batches < b.
  std::vector<int64_t> expected(o.union_keys.size());
  for (size_t i = 0; i < o.union_keys.size(); ++i)
    expected[i] = key_batches_[o.union_keys[i] / world_]++;
  s->expected = long_tensor(expected);

  s->requester_in_union.resize(world_);
  s->list_keys.assign(world_, {});
  s->list_in_req.assign(world_, {});
  s->list_in_union.assign(world_, {});
  s->list_in_req_device.assign(world_, {});
  s->list_in_union_device.assign(world_, {});
  for (int r = 0; r < world_; ++r) {
    const at::Tensor in_union = long_tensor(o.requester_in_union[r]);
    s->requester_in_union[r] = in_union.to(store_.device());
    for (int l = 0; l < lists; ++l) {
      s->list_keys[r].push_back(long_tensor(o.list_keys[r][l]));
      s->list_in_req[r].push_back(long_tensor(o.list_in_requester[r][l]));
      s->list_in_union[r].push_back(in_union.index_select(0, s->list_in_req[r][l]));
      s->list_in_req_device[r].push_back(on_device(s->list_in_req[r][l]));
      s->list_in_union_device[r].push_back(on_device(s->list_in_union[r][l]));
    }
  }
  return Status::ok();
}

Status Trainer::lookup_gather(int64_t b) {
  auto s = state(b);
  std::shared_lock<std::shared_mutex> lock(store_mutex_);
  std::vector<at::Tensor> keys;
  if (owner_dedup()) {
    keys.push_back(s->union_keys);
  } else {
    for (const auto& requester_keys : s->owner.requester_keys)
      keys.push_back(long_tensor(requester_keys));
  }
  s->host_rows.clear();
  s->host_versions.clear();
  for (const at::Tensor& k : keys) {
    auto rows = store_.gather(k);
    if (!rows.is_ok()) return rows.status();
    auto versions = store_.versions(k);
    if (!versions.is_ok()) return versions.status();
    s->host_rows.push_back(*rows);
    s->host_versions.push_back(*versions);
  }
  if (b == window_begin_ && held_keys_.defined()) use_held_rows(keys[0], s->host_rows[0], s->host_versions[0]);
  return Status::ok();
}

Status Trainer::lookup_copy(int64_t b) {
  auto s = state(b);
  if (buffer_) {
    // From pinned memory on a GPU, so that the copy runs on this task's stream.
    const at::Tensor& rows = s->host_rows[0];
    const bool pin = rows.is_cpu() && options_.device.is_cuda();
    CT_RETURN_IF_ERROR(buffer_->load_prefetch(
        s->union_keys, pin ? at::empty(rows.sizes(), rows.options().pinned_memory(true)).copy_(rows) : rows,
        s->host_versions[0]));
  } else {
    s->device_rows.clear();
    for (const at::Tensor& rows : s->host_rows)
      s->device_rows.push_back(rows.is_cpu() ? upload(rows) : rows.clone());
  }
  s->host_rows.clear();
  return Status::ok();
}

Status Trainer::dbp_patch(int64_t b) {
  buffer_->swap();
  real::used_here(buffer_->active_rows());  // copied in on the copy stream, patched here
  // A window's first batch was gathered after the last window's update.
  if (b == window_begin_) return Status::ok();
  // Rows batch b-1 updated after batch b's rows were gathered.
  auto previous = state(b - 1);
  StatusOr<int64_t> patched = int64_t{0};
  {
    std::shared_lock<std::shared_mutex> lock(store_mutex_);
    patched = buffer_->patch(store_, previous->union_keys);
  }
  release(b - 1);
  if (!patched.is_ok()) return patched.status();
  std::lock_guard<std::mutex> lock(results_mutex_);
  patched_rows_ += *patched;
  return Status::ok();
}

void Trainer::served_rows(BatchState& s, int r, int list, at::Tensor* rows, at::Tensor* read, at::Tensor* expected) {
  const at::Tensor& in_union = s.list_in_union[r][list];
  *expected = s.expected.index_select(0, in_union);
  // The rows and indices were made on other streams (the copy's, the patch's, key_a2a's).
  if (buffer_) {
    *rows = real::used_here(buffer_->active_rows()).index_select(0, real::used_here(s.list_in_union_device[r][list]));
    *read = buffer_->active_versions().index_select(0, in_union);
  } else if (owner_dedup()) {
    *rows = real::used_here(s.device_rows[0]).index_select(0, real::used_here(s.list_in_union_device[r][list]));
    *read = s.host_versions[0].index_select(0, in_union);
  } else {
    *rows = real::used_here(s.device_rows[r]).index_select(0, real::used_here(s.list_in_req_device[r][list]));
    *read = s.host_versions[r].index_select(0, s.list_in_req[r][list]);
  }
}

void Trainer::check_versions(int64_t b, const at::Tensor& keys, const at::Tensor& read, const at::Tensor& expected) {
  const at::Tensor stale = read.ne(expected);
  const int64_t n = stale.sum().item<int64_t>();
  if (n == 0) return;
  const int64_t i = stale.nonzero()[0][0].item<int64_t>();
  std::lock_guard<std::mutex> lock(results_mutex_);
  stale_rows_ += n;
  if (!first_stale_ || b < first_stale_->batch) {
    first_stale_ = StaleRow{b, keys[i].item<int64_t>(), read[i].item<int64_t>(), expected[i].item<int64_t>()};
  }
}

Status Trainer::emb_a2a_fwd(real::TaskContext& ctx, int64_t b, int micro) {
  auto s = state(b);
  if (buffer_ && buffer_->active_keys().numel() != s->union_keys.numel()) {
    return Status::internal("the dual buffer's Active holds " + std::to_string(buffer_->active_keys().numel()) +
                            " rows, batch " + std::to_string(b) + " has " + std::to_string(s->union_keys.numel()));
  }
  const int64_t dim = options_.spec.embedding_dim;
  std::vector<int> lists;
  if (!per_micro()) {
    lists = {0};
  } else if (micro >= 0) {
    lists = {micro};
  } else {
    for (int m = 0; m < options_.micro_batches; ++m)
      lists.push_back(m);
  }
  for (int l : lists) {
    std::vector<at::Tensor> parts;
    std::vector<int64_t> send_splits, recv_splits;
    for (int r = 0; r < world_; ++r) {
      at::Tensor rows, read, expected;
      served_rows(*s, r, l, &rows, &read, &expected);
      check_versions(b, s->list_keys[r][l], read, expected);
      parts.push_back(rows);
      send_splits.push_back(rows.size(0));
    }
    const OwnerRuns& mine = per_micro() ? s->requester.micro[l] : s->requester.batch;
    recv_splits = mine.per_owner;
    at::Tensor send = at::cat(parts, 0);
    at::Tensor recv = at::empty({static_cast<int64_t>(mine.keys.size()), dim}, floats());
    CT_RETURN_IF_ERROR(ctx.comm.all_to_all(*ctx.group, recv, send, recv_splits, send_splits));
    if (per_micro()) {
      s->micro[l].rows = recv;
    } else {
      s->batch_rows = recv;
    }
  }
  return Status::ok();
}

Status Trainer::emb_a2a_bwd(real::TaskContext& ctx, int64_t b, int micro) {
  auto s = state(b);
  const int64_t dim = options_.spec.embedding_dim;
  const OwnerExchange& o = s->owner;
  s->owner_acc.resize(world_);
  if (!per_micro()) {
    // acc = 0 + g_0 + g_1 + ... over the batch list, on the requester.
    at::Tensor acc = at::zeros({static_cast<int64_t>(s->requester.batch.keys.size()), dim}, floats());
    for (MicroState& m : s->micro) {  // gradients from the compute stream, indices from key_a2a's
      acc.index_add_(0, real::used_here(m.in_batch), real::used_here(m.grad));
      m.grad = at::Tensor();
    }
    std::vector<int64_t> recv_splits;
    for (int r = 0; r < world_; ++r)
      recv_splits.push_back(static_cast<int64_t>(o.requester_keys[r].size()));
    int64_t total = 0;
    for (int64_t c : recv_splits)
      total += c;
    at::Tensor recv = at::empty({total, dim}, floats());
    CT_RETURN_IF_ERROR(ctx.comm.all_to_all(*ctx.group, recv, acc, recv_splits, s->requester.batch.per_owner));
    int64_t at = 0;
    for (int r = 0; r < world_; ++r) {
      s->owner_acc[r] = recv.narrow(0, at, recv_splits[r]);
      at += recv_splits[r];
    }
    return Status::ok();
  }
  std::vector<int> ms;
  if (micro >= 0) {
    ms = {micro};
  } else {
    for (int m = 0; m < options_.micro_batches; ++m)
      ms.push_back(m);
  }
  for (int m : ms) {
    // The same sums as above, done on the owner as the micro-batches arrive.
    std::vector<int64_t> recv_splits;
    int64_t total = 0;
    for (int r = 0; r < world_; ++r) {
      recv_splits.push_back(static_cast<int64_t>(o.list_keys[r][m].size()));
      total += recv_splits.back();
    }
    at::Tensor recv = at::empty({total, dim}, floats());
    real::used_here(s->micro[m].grad);  // from the compute stream
    CT_RETURN_IF_ERROR(
        ctx.comm.all_to_all(*ctx.group, recv, s->micro[m].grad, recv_splits, s->requester.micro[m].per_owner));
    s->micro[m].grad = at::Tensor();
    int64_t at = 0;
    for (int r = 0; r < world_; ++r) {
      if (!s->owner_acc[r].defined()) {
        s->owner_acc[r] = at::zeros({static_cast<int64_t>(o.requester_keys[r].size()), dim}, floats());
      }
      s->owner_acc[r].index_add_(0, real::used_here(s->list_in_req_device[r][m]), recv.narrow(0, at, recv_splits[r]));
      at += recv_splits[r];
    }
  }
  return Status::ok();
}

Status Trainer::emb_update(int64_t b) {
  auto s = state(b);
  const int64_t dim = options_.spec.embedding_dim;
  // total = 0 + acc_0 + acc_1 + ... in rank order, where the store is.
  const at::Device store = store_.device();
  at::Tensor total = at::zeros({s->union_keys.numel(), dim}, at::TensorOptions().dtype(at::kFloat).device(store));
  for (int r = 0; r < world_; ++r) {
    if (s->owner_acc[r].defined()) {
      total.index_add_(0, real::used_here(s->requester_in_union[r]), real::used_here(s->owner_acc[r]).to(store));
    }
  }
  Status status;
  if (options_.variant == Variant::kSemiSync && b == window_end_ - 1) status = hold_rows(s->union_keys);
  if (status.is_ok()) {
    std::unique_lock<std::shared_mutex> lock(store_mutex_);
    status = store_.apply_gradients(s->union_keys, total);
  }
  s->owner_acc.clear();
  s->device_rows.clear();
  release(b);
  return status;
}

// semisync reads batch b+1's rows before batch b's update. When b ends a
// window, the next window's first batch is gathered after that update, so
// the rows it changes are kept as they were and served in their place.
Status Trainer::hold_rows(const at::Tensor& keys) {
  std::shared_lock<std::shared_mutex> lock(store_mutex_);
  auto rows = store_.gather(keys);
  if (!rows.is_ok()) return rows.status();
  auto versions = store_.versions(keys);
  if (!versions.is_ok()) return versions.status();
  held_keys_ = keys.clone();
  held_rows_ = *rows;
  held_versions_ = *versions;
  return Status::ok();
}

void Trainer::use_held_rows(const at::Tensor& keys, at::Tensor& rows, at::Tensor& versions) const {
  std::unordered_map<int64_t, int64_t> held_at;
  const int64_t* held = held_keys_.data_ptr<int64_t>();
  for (int64_t i = 0; i < held_keys_.numel(); ++i)
    held_at[held[i]] = i;
  const at::Tensor k = keys.contiguous();
  std::vector<int64_t> to, from;
  for (int64_t i = 0; i < k.numel(); ++i) {
    const auto it = held_at.find(k.data_ptr<int64_t>()[i]);
    if (it == held_at.end()) continue;
    to.push_back(i);
    from.push_back(it->second);
  }
  if (to.empty()) return;
  const at::Tensor to_t = long_tensor(to), from_t = long_tensor(from);
  rows.index_copy_(0, to_t.to(rows.device()),
                   held_rows_.index_select(0, from_t.to(held_rows_.device())).to(rows.device()));
  versions.index_copy_(0, to_t, held_versions_.index_select(0, from_t));
}

}  // namespace clustertwin::real::nestpipe
