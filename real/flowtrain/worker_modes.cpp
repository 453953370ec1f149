// One step of each of run flowtrain's modes (flowtrain_command.h), on the
// rank's device: monolithic data parallelism, disagg-sync's lock-step rounds
// over send/recv, and flowtrain's decoupled flow through the memory pool.

#include <algorithm>
#include <set>

#include "models/flowtrain/dispatch.h"
#include "real/flowtrain/worker.h"

namespace clustertwin::real::flowtrain {

namespace pf = ::clustertwin::models::flowtrain;

// ---- monolithic: encoder and backbone on every rank --------------------------------------------------------------
Status Worker::monolithic() {
  for (size_t i = static_cast<size_t>(rank_); i < samples_.size(); i += static_cast<size_t>(comm_.world_size())) {
    const StepSample& s = samples_[i];
    if (s.shape.images == 0) {
      backbone_sample(s, torch::Tensor());
      continue;
    }
    // The backward split at the image tokens (the same gradients as one backward, tiny_vlm_test), so that the
    // trace times the encoder's backward apart from the backbone's.
    torch::Tensor tokens = encode(s, true);
    torch::Tensor detached = tokens.detach().requires_grad_(true);
    backbone_sample(s, detached);
    encoder_backward(s, tokens, detached.grad());
  }
  return Status::ok();
}

// ---- disagg-sync: lock-step rounds over c10d send/recv (staged by the communicator where its backend wants) ------
Status Worker::disagg_sync() {
  auto plan = pf::plan_step(shapes_, encoders_, backbones(), a_.micro_batch_tokens, false);
  if (!plan.is_ok()) return plan.status();
  const pf::StepPlan& as = *plan;
  const size_t rounds = as.bins.size() / static_cast<size_t>(backbones());
  for (size_t r = 0; r < rounds; ++r) {
    std::vector<int64_t> round;  // the round's samples, bin by bin
    for (size_t j = r * backbones(); j < (r + 1) * backbones(); ++j)
      round.insert(round.end(), as.bins[j].begin(), as.bins[j].end());
    // The sends under way; each keeps what it sends (and its staged copy) alive until it is waited for.
    std::vector<PendingSend> sends;
    std::vector<torch::Tensor> keep;
    if (is_encoder()) {
      std::vector<std::pair<int64_t, torch::Tensor>> mine;
      for (int64_t i : round) {
        if (as.encoder_of[i] != rank_) continue;
        torch::Tensor tokens = encode(samples_[i], true);
        torch::Tensor out = tokens.detach().contiguous();
        const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
        auto w = comm_.send_async(world_, out, as.backbone_of[i], static_cast<int>(i));
        if (!w.is_ok()) return w.status();
        record("send-embedding", "flowtrain/transfer", start, cpu, 0, out.numel() * 4);
        sends.push_back(*w);
        keep.push_back(out);
        mine.emplace_back(i, tokens);
      }
      for (auto& [i, tokens] : mine) {
        torch::Tensor grad = token_buffer(samples_[i]);
        CT_RETURN_IF_ERROR(comm_.recv(world_, grad, as.backbone_of[i], static_cast<int>(i)));
        encoder_backward(samples_[i], tokens, grad);
      }
    } else {
      for (int64_t i : round) {
        if (as.backbone_of[i] != rank_) continue;
        const StepSample& s = samples_[i];
        if (s.shape.images == 0) {
          backbone_sample(s, torch::Tensor());
          continue;
        }
        torch::Tensor tokens = token_buffer(s);
        CT_RETURN_IF_ERROR(comm_.recv(world_, tokens, as.encoder_of[i], static_cast<int>(i)));
        tokens.requires_grad_(true);
        backbone_sample(s, tokens);
        torch::Tensor grad = tokens.grad().contiguous();
        auto w = comm_.send_async(world_, grad, as.encoder_of[i], static_cast<int>(i));
        if (!w.is_ok()) return w.status();
        sends.push_back(*w);
        keep.push_back(grad);
      }
    }
    for (const auto& w : sends)
      CT_RETURN_IF_ERROR(comm_.wait_send(w));
  }
  return Status::ok();
}

// ---- flowtrain: decoupled through the pool (pool_transfer.h moves the bytes) ------------------------------------
Status Worker::flowtrain() {
  auto plan = pf::plan_step(shapes_, encoders_, backbones(), a_.micro_batch_tokens, true);
  if (!plan.is_ok()) return plan.status();
  const pf::StepPlan& as = *plan;
  if (is_encoder()) {
    std::set<uint64_t> mine;  // the keys of this encoder's samples
    // This encoder's samples, round-robin over the step's image samples (models/flowtrain/dispatch.h).
    pf::EncoderDispatch dispatch(pf::EncoderDispatch::Policy::kRoundRobin, as.order, encoders_);
    for (int i; (i = dispatch.take(rank_)) != pf::EncoderDispatch::kNone;) {
      // No graph kept: the backward recomputes the forward when the gradient comes.
      torch::Tensor tokens = encode(samples_[i], false).contiguous();
      const uint64_t key = pool_key(step_, i);
      const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
      Status put = pools_->embeddings(rank_).put(key, tokens, a_.timeout_s);
      if (!put.is_ok()) return pool_error("put an embedding", put);
      record("pool-put", "flowtrain/pool_put", start, cpu, 0, tokens.numel() * 4);
      mine.insert(key);
    }
    // The gradients in the plan's micro-batch order (the order the backbones work in), whatever order they arrive
    // in: the encoder's gradient sums then add up in one order in every run, so that a run is reproducible bit for
    // bit (a resumed one equals an uninterrupted one). The gradient pool holds a whole step, so no backbone waits.
    for (const std::vector<int64_t>& bin : as.bins) {
      for (int64_t i : bin) {
        const uint64_t key = pool_key(step_, i);
        if (mine.count(key) == 0) continue;
        const StepSample& s = samples_[i];
        torch::Tensor grad = token_buffer(s);
        const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
        Status take = pools_->gradients(rank_).take(key, grad, a_.timeout_s);
        if (!take.is_ok()) return pool_error("take a gradient", take);
        record("pool-take", "flowtrain/pool_take", start, cpu, 0, grad.numel() * 4);
        encoder_backward(s, encode(s, true), grad);
      }
    }
    return Status::ok();
  }
  // This replica's micro-batches, round-robin (models/flowtrain/dispatch.h), each waiting on the pool.
  pf::MicroBatchDispatch dispatch(pf::MicroBatchDispatch::Policy::kRoundRobin, static_cast<int>(as.bins.size()),
                                  backbones());
  for (int j; (j = dispatch.take(rank_ - encoders_, [](int) { return true; })) != pf::MicroBatchDispatch::kDone;) {
    for (int64_t i : as.bins[static_cast<size_t>(j)]) {
      const StepSample& s = samples_[i];
      if (s.shape.images == 0) {
        backbone_sample(s, torch::Tensor());
        continue;
      }
      torch::Tensor tokens = token_buffer(s);
      const uint64_t key = pool_key(step_, i);
      const double start = tracer_.now_us(), cpu = Tracer::thread_cpu_us();
      Status take = pools_->embeddings(as.encoder_of[i]).take(key, tokens, a_.timeout_s);
      if (!take.is_ok()) return pool_error("take an embedding", take);
      record("pool-take", "flowtrain/pool_take", start, cpu, 0, tokens.numel() * 4);
      tokens.requires_grad_(true);
      backbone_sample(s, tokens);
      torch::Tensor grad = tokens.grad().contiguous();
      const double put_start = tracer_.now_us(), put_cpu = Tracer::thread_cpu_us();
      Status put = pools_->gradients(as.encoder_of[i]).put(key, grad, a_.timeout_s);
      if (!put.is_ok()) return pool_error("put a gradient", put);
      record("pool-put", "flowtrain/pool_put", put_start, put_cpu, 0, grad.numel() * 4);
    }
  }
  return Status::ok();
}

Status Worker::pool_error(const std::string& what, const Status& s) const {
  return Status::internal("run flowtrain: rank " + std::to_string(rank_) + " could not " + what + " in step " +
                          std::to_string(step_) + ": " + s.message());
}

}  // namespace clustertwin::real::flowtrain
