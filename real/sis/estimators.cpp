#include "real/sis/estimators.h"

#include "real/sis/selective_sampling.h"

namespace clustertwin::real::sis {
namespace {

struct EstimatorName {
  Estimator estimator;
  const char* name;
};
constexpr EstimatorName kEstimatorNames[] = {
    {Estimator::kOnPolicy, "on-policy"}, {Estimator::kNaive, "naive"}, {Estimator::kSequenceIs, "seq-is"},
    {Estimator::kTokenIs, "token-is"},   {Estimator::kTis, "tis"},     {Estimator::kMis, "mis"},
    {Estimator::kIcePop, "icepop"},      {Estimator::kGspo, "gspo"},   {Estimator::kSisExact, "sis-exact"},
    {Estimator::kSisTopK, "sis-topk"}};

}  // namespace

const std::vector<Estimator>& all_estimators() {
  static const std::vector<Estimator> all = [] {
    std::vector<Estimator> v;
    for (const EstimatorName& n : kEstimatorNames)
      v.push_back(n.estimator);
    return v;
  }();
  return all;
}

const char* estimator_name(Estimator estimator) {
  for (const EstimatorName& n : kEstimatorNames) {
    if (n.estimator == estimator) return n.name;
  }
  return "?";
}

StatusOr<Estimator> estimator_from_name(const std::string& name) {
  std::string allowed;
  for (const EstimatorName& n : kEstimatorNames) {
    if (name == n.name) return n.estimator;
    allowed += (allowed.empty() ? "" : ", ") + std::string(n.name);
  }
  return Status::invalid_argument("estimator '" + name + "': unknown (allowed: " + allowed + ")");
}

StatusOr<at::Tensor> estimator_coefficients(Estimator estimator, const OffPolicyBatch& batch, const EstimatorOptions& o,
                                            uint64_t seed, double* acceptance_rate) {
  const Rollouts& r = batch.rollouts;
  if (estimator == Estimator::kOnPolicy || estimator == Estimator::kNaive)
    return at::ones(r.tokens.sizes(), at::kDouble);
  const at::Tensor full_pi = rollout_full_log_probs(batch.log_probs_pi.detach(), r);
  const at::Tensor full_mu = rollout_full_log_probs(batch.log_probs_mu.detach(), r);
  const at::Tensor y = r.tokens.unsqueeze(-1);
  const at::Tensor log_w = (full_pi.gather(-1, y) - full_mu.gather(-1, y)).squeeze(-1);  // [N, T]
  const at::Tensor w = at::exp(log_w);
  switch (estimator) {
    case Estimator::kOnPolicy:
    case Estimator::kNaive:
      break;
    case Estimator::kSequenceIs:
      return at::exp(log_w.sum(1, true)).expand_as(log_w).contiguous();
    case Estimator::kTokenIs:
      return w;
    case Estimator::kTis:
      return at::clamp_max(w, o.cap);
    case Estimator::kMis:
      return at::where(w <= o.cap, w, at::zeros_like(w));
    case Estimator::kIcePop:
      return at::where((w >= o.icepop_low) & (w <= o.icepop_high), w, at::zeros_like(w));
    case Estimator::kGspo:
      return at::exp(log_w.mean(1, true)).expand_as(log_w).contiguous();
    case Estimator::kSisExact:
    case Estimator::kSisTopK: {
      SisInputs in;
      in.logp_new = log_w + full_mu.gather(-1, y).squeeze(-1);
      in.logp_old = full_mu.gather(-1, y).squeeze(-1);
      in.vocab = full_pi.size(-1);
      if (estimator == Estimator::kSisExact) {
        in.full_logp_old = full_mu;
        in.full_logp_new = full_pi;
      } else {
        const auto [values, indices] = full_mu.topk(o.top_k, -1);
        in.topk_logp_old = values;
        in.topk_logp_new = full_pi.gather(-1, indices);
        in.in_topk = (indices == y).any(-1);
      }
      auto accepted = sis_accept(in, seed);
      if (!accepted.is_ok()) return accepted.status();
      if (acceptance_rate != nullptr) *acceptance_rate = accepted->acceptance_rate;
      return at::where(accepted->accepted, at::ones_like(w), w);
    }
  }
  return Status::internal("estimator_coefficients: unhandled estimator");
}

at::Tensor score_gradients(const AutomatonTask& task, const at::Tensor& log_probs_pi, const Rollouts& r,
                           const at::Tensor& coefficients, const at::Tensor& advantages, int64_t groups) {
  const int64_t n = r.tokens.size(0), length = r.tokens.size(1), s = task.states, v = task.vocab;
  const int64_t per_group = n / groups;
  // d log pi(y | t, s) / d logits(t, s) = onehot(y) - pi(. | t, s); logits = theta[s] + f_t psi[s].
  const at::Tensor p = at::exp(rollout_full_log_probs(log_probs_pi.detach(), r));  // [N, T, V]
  const at::Tensor weight = coefficients * advantages.unsqueeze(1) / static_cast<double>(per_group);
  const at::Tensor d_logits = (at::one_hot(r.tokens, v).to(at::kDouble) - p) * weight.unsqueeze(-1);
  const at::Tensor f =
      length > 1 ? at::arange(length, at::kDouble) / static_cast<double>(length - 1) : at::zeros({1}, at::kDouble);
  const at::Tensor group = at::arange(n, at::kLong).div(per_group, "floor").unsqueeze(1);
  const at::Tensor key = (group * s + r.states).reshape({-1});  // [N T]
  at::Tensor theta = at::zeros({groups * s, v}, at::kDouble), psi = at::zeros({groups * s, v}, at::kDouble);
  theta.index_add_(0, key, d_logits.reshape({-1, v}));
  psi.index_add_(0, key, (d_logits * f.view({1, length, 1})).reshape({-1, v}));
  return at::cat({theta.view({groups, s * v}), psi.view({groups, s * v})}, 1);
}

at::Tensor exact_gradient(const AutomatonTask& task, const TabularPolicy& policy, int64_t length) {
  const at::Tensor theta = policy.theta.detach().clone().requires_grad_(true);
  const at::Tensor psi = policy.psi.detach().clone().requires_grad_(true);
  const at::Tensor start = at::full({task.states}, 1.0 / static_cast<double>(task.states), at::kDouble);
  const at::Tensor j = expected_reward(task, position_log_probs({theta, psi}, length), start);
  j.backward();
  return at::cat({theta.grad().reshape({-1}), psi.grad().reshape({-1})});
}

}  // namespace clustertwin::real::sis
