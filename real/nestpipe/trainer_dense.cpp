// The trainer's dense side: forward and backward over micro-batches, the
// data-parallel all-reduce and optimizer.

#include <cmath>
#include <cstring>

#include "common/check.h"
#include "real/core/device.h"
#include "real/nestpipe/trainer.h"
#include "real/nestpipe/trainer_state.h"

namespace clustertwin::real::nestpipe {
namespace {

std::vector<int> micro_batches_of(int micro, int count) {
  if (micro >= 0) return {micro};
  std::vector<int> all;
  for (int m = 0; m < count; ++m)
    all.push_back(m);
  return all;
}

}  // namespace

at::Tensor Trainer::forward_logits(const at::Tensor& dense, const at::Tensor& embeddings) {
  if (options_.spec.family == "hstu") {
    // The sequence, then the target item whose click the model predicts.
    const int64_t n = options_.spec.sequence_length;
    return model_.forward(embeddings.narrow(1, 0, n), embeddings.select(1, n));
  }
  return model_.forward(dense, embeddings);
}

// Under fwp and nestpipe one task per micro-batch; otherwise one task that
// loops over the same split, so that every variant does the same arithmetic
// in the same order (TorchRec "with the same micro-batch split").
Status Trainer::dense_fwd(int64_t b, int micro) {
  auto s = state(b);
  const int64_t dim = options_.spec.embedding_dim;
  for (int m : micro_batches_of(micro, options_.micro_batches)) {
    MicroState& ms = s->micro[m];
    // Made on other streams (rows: the All2All's; batch: h2d's; indices: key_a2a's).
    const at::Tensor rows = per_micro() ? real::used_here(ms.rows)
                                        : real::used_here(s->batch_rows).index_select(0, real::used_here(ms.in_batch));
    ms.leaf = rows.detach().requires_grad_(true);
    const int64_t samples = ms.samples.numel();
    const at::Tensor embeddings = ms.leaf.index_select(0, real::used_here(ms.inverse)).view({samples, features_, dim});
    const at::Tensor& in_micro = real::used_here(ms.samples);
    const at::Tensor logits = forward_logits(real::used_here(s->dense).index_select(0, in_micro), embeddings);
    // Summed over the micro-batch and divided by the whole batch: the
    // micro-batches' losses add up to the batch's mean loss.
    ms.loss = at::binary_cross_entropy_with_logits(logits, real::used_here(s->labels).index_select(0, in_micro), {}, {},
                                                   at::Reduction::Sum) /
              static_cast<double>(options_.samples);
    ms.rows = at::Tensor();
  }
  return Status::ok();
}

Status Trainer::dense_bwd(int64_t b, int micro) {
  auto s = state(b);
  for (int m : micro_batches_of(micro, options_.micro_batches)) {
    MicroState& ms = s->micro[m];
    ms.loss.backward();
    s->loss += ms.loss.item<double>();
    ms.grad = ms.leaf.grad();
    ms.loss = at::Tensor();
    ms.leaf = at::Tensor();
  }
  return Status::ok();
}

Status Trainer::dense_allreduce(real::TaskContext& ctx, int64_t b) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params_)  // the gradients come from the compute stream
    grads.push_back(p.grad().defined() ? real::used_here(p.grad()).reshape({-1}) : at::zeros({p.numel()}, p.options()));
  at::Tensor flat = at::cat(grads);
  CT_RETURN_IF_ERROR(ctx.comm.all_reduce(*ctx.group, flat));
  flat.div_(static_cast<double>(world_));
  std::vector<at::Tensor> averaged;
  int64_t at = 0;
  for (const at::Tensor& p : params_) {
    averaged.push_back(flat.narrow(0, at, p.numel()).view(p.sizes()));
    at += p.numel();
  }
  step_dense_optimizer(averaged);
  for (at::Tensor& p : params_)
    p.mutable_grad() = at::Tensor();
  auto s = state(b);
  {
    std::lock_guard<std::mutex> lock(results_mutex_);
    losses_[b] = s->loss;
  }
  release(b);
  return Status::ok();
}

void Trainer::step_dense_optimizer(const std::vector<at::Tensor>& grads) {
  at::NoGradGuard no_grad;
  const DenseOptimizer& o = options_.dense_optimizer;
  if (o.kind == DenseOptimizer::Kind::kSgd) {
    for (size_t i = 0; i < params_.size(); ++i)
      params_[i].sub_(grads[i], o.lr);
    return;
  }
  // Adam as torch.optim.Adam computes it (no weight decay, no amsgrad).
  if (adam_m_.empty()) {
    for (const at::Tensor& p : params_) {
      adam_m_.push_back(at::zeros_like(p));
      adam_v_.push_back(at::zeros_like(p));
    }
  }
  ++adam_step_;
  const double bias1 = 1.0 - std::pow(static_cast<double>(o.beta1), static_cast<double>(adam_step_));
  const double bias2 = 1.0 - std::pow(static_cast<double>(o.beta2), static_cast<double>(adam_step_));
  for (size_t i = 0; i < params_.size(); ++i) {
    adam_m_[i].mul_(o.beta1).add_(grads[i], 1.0 - o.beta1);
    adam_v_[i].mul_(o.beta2).addcmul_(grads[i], grads[i], 1.0 - o.beta2);
    const at::Tensor denom = (adam_v_[i].sqrt() / std::sqrt(bias2)).add_(o.eps);
    params_[i].addcdiv_(adam_m_[i], denom, -o.lr / bias1);
  }
}

}  // namespace clustertwin::real::nestpipe
