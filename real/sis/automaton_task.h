#pragma once

// A task whose reward an automaton decides, and a policy whose next-token
// distribution depends only on the position and the automaton's state, so
// that everything about it is computed exactly (SIS's estimator and stability
// studies, experiments/sis/README.md).
//
//   tokens      y_0 .. y_{T-1} from a vocabulary of V
//   automaton   s_0 = the prompt's start state, s_{t+1} = delta(s_t, y_t)
//   reward      R(y) = (1/T) sum_t r(s_t, y_t), r in {0, 1}: the fraction of
//               positions where the token emitted was the one state s_t asks for
//   policy      pi_theta(v | t, s) = softmax_v(theta[s] + (t / (T - 1)) psi[s])
//
// The policy is autoregressive (each token depends on the prefix through the
// automaton's state) yet J(theta) = E_pi[R] is a dynamic programme over
// (position, state) of T x S x V terms, and its gradient comes from autograd.
// A policy drifted from theta (the behaviour policy mu) is another parameter
// pair; the exact per-token KL between two policies is the same programme.

#include <ATen/ATen.h>

#include <cstdint>

#include "common/status.h"

namespace clustertwin::real::sis {

/// The automaton: delta(s, v) = (s + v) mod S; r(s, v) = 1 when v = (2s + 1)
/// mod V. Every state reaches every other, and each asks for its own token.
struct AutomatonTask {
  int64_t vocab = 8;
  int64_t states = 5;
  at::Tensor next_state;  // [S, V] long
  at::Tensor reward;      // [S, V] double, r(s, v)
  at::Tensor transition;  // [S, V, S] double, one-hot of next_state
};

/// InvalidArgument naming the field for vocab < 2 or states < 1.
StatusOr<AutomatonTask> make_automaton_task(int64_t vocab, int64_t states);

/// The policy's parameters, [S, V] each, double.
struct TabularPolicy {
  at::Tensor theta;
  at::Tensor psi;
};

/// theta and psi drawn N(0, scale^2) from `seed`.
TabularPolicy random_policy(const AutomatonTask& task, double scale, uint64_t seed);

/// theta + drift * N(0, 1), psi + drift * N(0, 1), from `seed`: a behaviour
/// policy `drift` away (no gradient).
TabularPolicy drifted_policy(const TabularPolicy& policy, double drift, uint64_t seed);

/// log pi(v | t, s) for every position, [T, S, V]; differentiable in the
/// policy's parameters.
at::Tensor position_log_probs(const TabularPolicy& policy, int64_t length);

/// The state distribution before each position, [T + 1, S], from `start` [S]
/// (a distribution over start states) under `log_probs` [T, S, V].
at::Tensor state_marginals(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start);

/// J = E[R] exactly; differentiable through `log_probs`.
at::Tensor expected_reward(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start);

/// The mean over positions of E_{s ~ mu} KL(mu(.|t,s) || pi(.|t,s)), exactly.
double per_token_kl(const AutomatonTask& task, const at::Tensor& log_probs_mu, const at::Tensor& log_probs_pi,
                    const at::Tensor& start);

/// P(R >= threshold) exactly (a programme over state and reward count).
double success_probability(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start,
                           double threshold);

/// Sequences drawn from a policy's position log-probabilities.
struct Rollouts {
  at::Tensor tokens;   // [N, T] long
  at::Tensor states;   // [N, T] long, s_t before y_t
  at::Tensor rewards;  // [N] double, R(y)
};

/// N sequences from `log_probs` [T, S, V], sequence i starting in
/// `start_states[i]`.
Rollouts sample_rollouts(const AutomatonTask& task, const at::Tensor& log_probs, const at::Tensor& start_states,
                         at::Generator& generator);

/// Each token's whole next-token distribution under `log_probs`, [N, T, V].
at::Tensor rollout_full_log_probs(const at::Tensor& log_probs, const Rollouts& rollouts);

/// log pi(y_t | t, s_t), [N, T].
at::Tensor rollout_token_log_probs(const at::Tensor& log_probs, const Rollouts& rollouts);

}  // namespace clustertwin::real::sis
