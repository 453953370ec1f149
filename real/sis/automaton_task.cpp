#include "real/sis/automaton_task.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <string>

namespace clustertwin::real::sis {
namespace {

const at::TensorOptions kDouble = at::TensorOptions().dtype(at::kDouble);

// The position feature t / (T - 1), in [0, 1].
at::Tensor position_feature(int64_t length) {
  return length > 1 ? at::arange(length, kDouble) / static_cast<double>(length - 1) : at::zeros({1}, kDouble);
}

}  // namespace

StatusOr<AutomatonTask> make_automaton_task(int64_t vocab, int64_t states) {
  if (vocab < 2) return Status::invalid_argument("automaton task: vocab " + std::to_string(vocab) + " must be >= 2");
  if (states < 1) return Status::invalid_argument("automaton task: states " + std::to_string(states) + " must be >= 1");
  AutomatonTask task;
  task.vocab = vocab;
  task.states = states;
  const at::Tensor s = at::arange(states, at::kLong).unsqueeze(1), v = at::arange(vocab, at::kLong).unsqueeze(0);
  task.next_state = (s + v).remainder(states);
  task.reward = (v == (2 * s + 1).remainder(vocab)).to(at::kDouble);
  task.transition = at::one_hot(task.next_state, states).to(at::kDouble);
  return task;
}

TabularPolicy random_policy(const AutomatonTask& task, double scale, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return {scale * at::randn({task.states, task.vocab}, g, kDouble),
          scale * at::randn({task.states, task.vocab}, g, kDouble)};
}

TabularPolicy drifted_policy(const TabularPolicy& policy, double drift, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  const at::Tensor d_theta = at::randn(policy.theta.sizes(), g, kDouble);
  const at::Tensor d_psi = at::randn(policy.psi.sizes(), g, kDouble);
  return {(policy.theta.detach() + drift * d_theta), (policy.psi.detach() + drift * d_psi)};
}

at::Tensor position_log_probs(const TabularPolicy& policy, int64_t length) {
  const at::Tensor f = position_feature(length).view({length, 1, 1});
  return at::log_softmax(policy.theta.unsqueeze(0) + f * policy.psi.unsqueeze(0), -1);
}

at::Tensor state_marginals(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start) {
  const int64_t length = log_probs.size(0);
  std::vector<at::Tensor> alpha{start.to(at::kDouble)};
  for (int64_t t = 0; t < length; ++t) {
    // alpha'(u) = sum_{s, v} alpha(s) pi(v | t, s) [delta(s, v) = u]
    const at::Tensor step = at::exp(log_probs[t]).unsqueeze(-1) * task.transition;  // [S, V, S]
    alpha.push_back(at::matmul(alpha.back(), step.sum(1)));
  }
  return at::stack(alpha);
}

at::Tensor expected_reward(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start) {
  const at::Tensor alpha = state_marginals(task, log_probs, start);  // [T + 1, S]
  const int64_t length = log_probs.size(0);
  // E[r_t] = sum_s alpha_t(s) sum_v pi(v | t, s) r(s, v); R is their mean.
  const at::Tensor per_state = (at::exp(log_probs) * task.reward.unsqueeze(0)).sum(-1);  // [T, S]
  return (alpha.slice(0, 0, length) * per_state).sum() / static_cast<double>(length);
}

double per_token_kl(const AutomatonTask& task, const at::Tensor& log_probs_mu, const at::Tensor& log_probs_pi,
                    const at::Tensor& start) {
  const at::Tensor mu = log_probs_mu.detach(), pi = log_probs_pi.detach();
  const at::Tensor alpha = state_marginals(task, mu, start).slice(0, 0, mu.size(0));
  const at::Tensor kl = (at::exp(mu) * (mu - pi)).sum(-1);  // [T, S]
  return (alpha * kl).sum().item<double>() / static_cast<double>(mu.size(0));
}

double success_probability(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start,
                           double threshold) {
  const at::Tensor p = at::exp(log_probs.detach());  // [T, S, V]
  const int64_t length = p.size(0), s_count = task.states;
  // beta[s, c]: probability of being in state s with c rewarded positions so far.
  at::Tensor beta = at::zeros({s_count, length + 1}, kDouble);
  beta.select(1, 0).copy_(start.to(at::kDouble));
  for (int64_t t = 0; t < length; ++t) {
    const at::Tensor hit = p[t] * task.reward, miss = p[t] * (1 - task.reward);  // [S, V]
    // Mass to (u, c) from (s, c) through misses and from (s, c - 1) through hits.
    const at::Tensor to_miss = at::einsum("sc,sv,svu->uc", {beta, miss, task.transition});
    const at::Tensor to_hit = at::einsum("sc,sv,svu->uc", {beta, hit, task.transition});
    beta = to_miss + at::constant_pad_nd(to_hit.slice(1, 0, length), {1, 0});
  }
  // R = c / T >= threshold, with c an integer: c >= ceil(threshold T), guarding against 0.75 * 16 = 12.000001.
  const int64_t needed = static_cast<int64_t>(std::ceil(threshold * static_cast<double>(length) - 1e-9));
  if (needed > length) return 0;
  return beta.slice(1, std::max<int64_t>(needed, 0), length + 1).sum().item<double>();
}

Rollouts sample_rollouts(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start_states,
                         at::Generator& generator) {
  const at::Tensor p = at::exp(log_probs.detach());
  const int64_t length = p.size(0), n = start_states.size(0);
  Rollouts r;
  r.tokens = at::empty({n, length}, at::kLong);
  r.states = at::empty({n, length}, at::kLong);
  at::Tensor state = start_states.to(at::kLong).clone();
  at::Tensor hits = at::zeros({n}, kDouble);
  for (int64_t t = 0; t < length; ++t) {
    const at::Tensor y = at::multinomial(p[t].index_select(0, state), 1, true, generator).squeeze(1);
    r.states.select(1, t).copy_(state);
    r.tokens.select(1, t).copy_(y);
    hits += task.reward.index({state, y});
    state = task.next_state.index({state, y});
  }
  r.rewards = hits / static_cast<double>(length);
  return r;
}

at::Tensor rollout_full_log_probs(const at::Tensor& log_probs, const Rollouts& r) {
  const int64_t length = log_probs.size(0);
  const at::Tensor positions = at::arange(length, at::kLong).unsqueeze(0).expand_as(r.states);
  return log_probs.index({positions, r.states});
}

at::Tensor rollout_token_log_probs(const at::Tensor& log_probs, const Rollouts& r) {
  return rollout_full_log_probs(log_probs, r).gather(-1, r.tokens.unsqueeze(-1)).squeeze(-1);
}

}  // namespace clustertwin::real::sis
