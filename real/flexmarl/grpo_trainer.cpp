#include "real/flexmarl/grpo_trainer.h"

#include <cmath>

#include "common/hash.h"
#include "common/text.h"
#include "real/flexmarl/host_device.h"

namespace clustertwin::real::flexmarl {

BatchTotals batch_totals(const std::vector<TrainSample>& batch) {
  BatchTotals t;
  t.sequences = static_cast<int64_t>(batch.size());
  for (const TrainSample& s : batch)
    t.tokens += s.tokens.size(0) - s.prompt_tokens;
  return t;
}

at::Tensor next_token_logp(ByteLm& model, const at::Tensor& tokens) {
  const int64_t t = tokens.size(1);
  at::Tensor logits = model->forward(tokens.slice(1, 0, t - 1));
  return at::log_softmax(logits, -1).gather(-1, tokens.slice(1, 1, t).unsqueeze(-1)).squeeze(-1);
}

at::Tensor flat_params(const ByteLm& model) {
  std::vector<at::Tensor> parts;
  for (const at::Tensor& p : model->parameters())
    parts.push_back(p.detach().reshape(-1));
  return at::cat(parts);
}

Status load_flat_params(ByteLm& model, const at::Tensor& flat) {
  std::vector<at::Tensor> ps = model->parameters();
  int64_t n = 0;
  for (const at::Tensor& p : ps)
    n += p.numel();
  if (!flat.defined() || flat.dim() != 1 || flat.numel() != n || flat.scalar_type() != ps.front().scalar_type()) {
    return Status::invalid_argument("policy weights: " + std::to_string(flat.defined() ? flat.numel() : 0) +
                                    " elements, the model has " + std::to_string(n) + " of " +
                                    std::string(c10::toString(ps.front().scalar_type())));
  }
  at::NoGradGuard no_grad;
  const at::Tensor on_device = to_device(flat, ps.front().device());  // one upload, not one per parameter
  int64_t offset = 0;
  for (at::Tensor& p : ps) {
    p.copy_(on_device.slice(0, offset, offset + p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  return Status::ok();
}

at::Tensor sample_draws(uint64_t id, uint64_t draw_seed, int64_t positions) {
  at::Generator generator = at::detail::createCPUGenerator(mix64(draw_seed ^ mix64(id)));
  return at::rand({positions}, generator, at::TensorOptions().dtype(at::kDouble));
}

AgentTrainer::AgentTrainer(ByteLm model, AdamOptions adam, sis::LossOptions loss)
    : model_(std::move(model)), adam_(adam), loss_(loss) {
  for (const at::Tensor& p : params()) {
    m_.push_back(at::zeros_like(p));
    v_.push_back(at::zeros_like(p));
  }
}

std::vector<at::Tensor> AgentTrainer::params() const {
  return model_->parameters();
}

StatusOr<double> AgentTrainer::accumulate(const std::vector<TrainSample>& micro, const BatchTotals& totals) {
  if (micro.empty()) return Status::invalid_argument("micro-batch: no samples");
  const int64_t context = model_->options().context;
  int64_t longest = 0;
  for (size_t i = 0; i < micro.size(); ++i) {
    const TrainSample& s = micro[i];
    const std::string name = "micro-batch sample " + std::to_string(i);
    if (!s.tokens.defined() || s.tokens.dim() != 1 || s.tokens.scalar_type() != at::kLong) {
      return Status::invalid_argument(name + ": tokens must be a 1-D int64 tensor");
    }
    const int64_t t = s.tokens.size(0);
    if (s.prompt_tokens < 1 || s.prompt_tokens >= t) {
      return Status::invalid_argument(name + ": prompt of " + std::to_string(s.prompt_tokens) + " tokens in " +
                                      std::to_string(t) + " (needs 1 <= prompt < tokens)");
    }
    if (t - 1 > context) {
      return Status::invalid_argument(name + ": " + std::to_string(t) + " tokens exceed the model's context " +
                                      std::to_string(context) + " + 1");
    }
    if (!s.logp_old.defined() || s.logp_old.dim() != 1 || s.logp_old.size(0) != t - 1) {
      return Status::invalid_argument(name + ": logp_old must be [" + std::to_string(t - 1) + "]");
    }
    if (loss_.sis) {
      const int64_t k = s.topk_ids.defined() && s.topk_ids.dim() == 2 ? s.topk_ids.size(1) : 0;
      if (k < 1 || s.topk_ids.size(0) != t - 1 || s.topk_ids.scalar_type() != at::kLong || !s.topk_logp_old.defined() ||
          s.topk_logp_old.sizes() != s.topk_ids.sizes() || (i > 0 && k != micro[0].topk_ids.size(1))) {
        return Status::invalid_argument(name + ": SIS needs topk_ids (int64) and topk_logp_old of [" +
                                        std::to_string(t - 1) + ", K], one K for the micro-batch");
      }
    }
    longest = std::max(longest, t);
  }
  // Right-padded [B, T]; the mask keeps each sample's response positions (position t predicts token t + 1).
  const int64_t b = static_cast<int64_t>(micro.size());
  const at::ScalarType dtype = params().front().scalar_type();
  at::Tensor tokens = at::zeros({b, longest}, at::kLong);
  at::Tensor logp_old = at::zeros({b, longest - 1}, at::TensorOptions().dtype(dtype));
  at::Tensor mask = at::zeros({b, longest - 1}, at::kBool);
  at::Tensor advantages = at::empty({b}, at::TensorOptions().dtype(dtype));
  for (int64_t i = 0; i < b; ++i) {
    const TrainSample& s = micro[static_cast<size_t>(i)];
    const int64_t t = s.tokens.size(0);
    tokens[i].slice(0, 0, t).copy_(s.tokens);
    logp_old[i].slice(0, 0, t - 1).copy_(s.logp_old);
    mask[i].slice(0, s.prompt_tokens - 1, t - 1).fill_(true);
    advantages[i] = s.advantage;
  }
  // Built in host memory above (a write per sample), uploaded whole: the
  // forward, the loss and the backward run where the parameters are.
  const at::Device device = params().front().device();
  tokens = to_device(tokens, device);
  sis::LossBatch batch;
  const at::Tensor logp_all = at::log_softmax(model_->forward(tokens.slice(1, 0, longest - 1)), -1);
  batch.tokens.logp_new = logp_all.gather(-1, tokens.slice(1, 1, longest).unsqueeze(-1)).squeeze(-1);
  if (loss_.sis) {
    const int64_t k = micro[0].topk_ids.size(1);
    at::Tensor ids = at::zeros({b, longest - 1, k}, at::kLong);
    at::Tensor topk_old = at::zeros({b, longest - 1, k}, at::TensorOptions().dtype(dtype));
    at::Tensor draws = at::ones({b, longest - 1}, at::TensorOptions().dtype(at::kDouble));
    const uint64_t draw_seed = sis::sis_draw_seed(loss_);
    for (int64_t i = 0; i < b; ++i) {
      const TrainSample& s = micro[static_cast<size_t>(i)];
      const int64_t t = s.tokens.size(0);
      ids[i].slice(0, 0, t - 1).copy_(s.topk_ids);
      topk_old[i].slice(0, 0, t - 1).copy_(s.topk_logp_old);
      draws[i].slice(0, 0, t - 1).copy_(sample_draws(s.id, draw_seed, t - 1));
    }
    ids = to_device(ids, device);
    batch.tokens.topk_logp_old = to_device(topk_old, device);
    batch.tokens.topk_logp_new = logp_all.gather(-1, ids);
    batch.tokens.in_topk = (ids == tokens.slice(1, 1, longest).unsqueeze(-1)).any(-1);
    batch.tokens.vocab = logp_all.size(-1);
    batch.tokens.draws = to_device(draws, device);
  }
  batch.tokens.logp_old = to_device(logp_old, device);
  batch.tokens.mask = to_device(mask, device);
  batch.advantages = to_device(advantages, device);
  batch.total_sequences = totals.sequences;
  batch.total_tokens = totals.tokens;
  auto loss = sis::policy_loss(batch, loss_);
  if (!loss.is_ok()) return loss.status();
  loss->loss.backward();
  return loss->loss.item<double>();
}

Status AgentTrainer::step(Communicator* comm, Group* group, double grad_scale) {
  std::vector<at::Tensor> ps = params();
  // One flat buffer: a single all-reduce, and the same summation order on every rank.
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : ps) {
    grads.push_back(p.grad().defined() ? p.grad().reshape(-1) : at::zeros({p.numel()}, p.options()));
  }
  at::Tensor flat = at::cat(grads);
  if (comm != nullptr && group != nullptr && group->size() > 1) CT_RETURN_IF_ERROR(comm->all_reduce(*group, flat));
  if (grad_scale != 1.0) flat.mul_(grad_scale);
  last_gradient_ = flat;
  at::NoGradGuard no_grad;
  ++adam_step_;
  const double c1 = 1 - std::pow(adam_.beta1, static_cast<double>(adam_step_));
  const double c2 = 1 - std::pow(adam_.beta2, static_cast<double>(adam_step_));
  int64_t offset = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    at::Tensor g = flat.slice(0, offset, offset + ps[i].numel()).view(ps[i].sizes());
    offset += ps[i].numel();
    m_[i].mul_(adam_.beta1).add_(g, 1 - adam_.beta1);
    v_[i].mul_(adam_.beta2).addcmul_(g, g, 1 - adam_.beta2);
    const at::Tensor denom = (v_[i] / c2).sqrt_().add_(adam_.eps);
    ps[i].addcdiv_(m_[i], denom, -adam_.lr / c1);
    if (ps[i].grad().defined()) ps[i].grad().zero_();
  }
  ++version_;
  return Status::ok();
}

int64_t AgentTrainer::state_numel() const {
  int64_t n = 2;  // Adam's step, the policy version
  for (const at::Tensor& p : params())
    n += 4 * p.numel();
  return n;
}

at::Tensor AgentTrainer::pack_state() const {
  std::vector<at::Tensor> parts;
  const std::vector<at::Tensor> ps = params();
  for (size_t i = 0; i < ps.size(); ++i) {
    parts.push_back(ps[i].detach().reshape(-1));
    parts.push_back(ps[i].grad().defined() ? ps[i].grad().reshape(-1) : at::zeros({ps[i].numel()}, ps[i].options()));
    parts.push_back(m_[i].reshape(-1));
    parts.push_back(v_[i].reshape(-1));
  }
  parts.push_back(at::full({1}, static_cast<double>(adam_step_), ps.front().options()));
  parts.push_back(at::full({1}, static_cast<double>(version_), ps.front().options()));
  return at::cat(parts);
}

Status AgentTrainer::unpack_state(const at::Tensor& state) {
  if (!state.defined() || state.dim() != 1 || state.numel() != state_numel()) {
    return Status::invalid_argument("agent state: " + std::to_string(state.defined() ? state.numel() : 0) +
                                    " elements, the trainer's layout has " + std::to_string(state_numel()));
  }
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> ps = params();
  // One upload when the state is in host memory, then copies on the device.
  const at::Tensor on_device = to_device(state, ps.front().device());
  int64_t offset = 0;
  auto next = [&](int64_t n) {
    at::Tensor part = on_device.slice(0, offset, offset + n);
    offset += n;
    return part;
  };
  for (size_t i = 0; i < ps.size(); ++i) {
    const int64_t n = ps[i].numel();
    ps[i].copy_(next(n).view(ps[i].sizes()));
    at::Tensor g = next(n).view(ps[i].sizes());
    if (!ps[i].grad().defined()) ps[i].mutable_grad() = at::zeros_like(ps[i]);
    ps[i].grad().copy_(g);
    m_[i].copy_(next(n).view(ps[i].sizes()));
    v_[i].copy_(next(n).view(ps[i].sizes()));
  }
  // The two counters from `state` itself: no wait for the device when it is in host memory.
  adam_step_ = static_cast<int64_t>(std::llround(state[offset].item<double>()));
  version_ = static_cast<int64_t>(std::llround(state[offset + 1].item<double>()));
  return Status::ok();
}

}  // namespace clustertwin::real::flexmarl
