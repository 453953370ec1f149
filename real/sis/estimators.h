#pragma once

// Off-policy policy-gradient estimators on the automaton task
// (real/sis/automaton_task.h), each written as per-token coefficients c_it:
//
//   g_hat = (1/N) sum_i A_i sum_t c_it grad log pi(y_it | t, s_it)
//
// with A_i = R_i - b for a constant baseline b (a constant keeps the
// unbiased estimators unbiased; GRPO's group mean estimates one),
// with sequences drawn from the behaviour policy mu (on-policy: from pi):
//
//   on-policy     c = 1, sequences from pi (the reference)
//   naive         c = 1, sequences from mu: no correction at all (what SIS's
//                 accepted tokens get)
//   seq-is        c = prod_t w_t (unbiased)
//   token-is      c = w_t, w_t = pi(y_t) / mu(y_t)
//   tis           c = min(w_t, C)
//   mis           c = 1[w_t <= C] w_t
//   icepop        c = w_t if w_t in [low, high], else 0
//   gspo          c = exp(mean_t log w_t), the same for every token of a sequence
//   sis-exact     c = 1 if SIS accepts y_t (exact envelope), else w_t
//   sis-topk      the same with the envelope over mu's top-K tokens
//
// GSPO's objective also divides by the length; with every sequence of one
// length that is a constant scale, left out here so that every estimator
// targets grad J itself. SIS's base treatment is token IS's weight.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "real/sis/automaton_task.h"

namespace clustertwin::real::sis {

enum class Estimator { kOnPolicy, kNaive, kSequenceIs, kTokenIs, kTis, kMis, kIcePop, kGspo, kSisExact, kSisTopK };

/// Every estimator, in the order above.
const std::vector<Estimator>& all_estimators();
const char* estimator_name(Estimator estimator);
/// InvalidArgument listing the names for an unknown one.
StatusOr<Estimator> estimator_from_name(const std::string& name);

struct EstimatorOptions {
  double cap = 2.0;  // tis, mis
  double icepop_low = 0.5, icepop_high = 5.0;
  int64_t top_k = 3;  // sis-topk
};

/// What an estimator needs of a batch drawn from mu.
struct OffPolicyBatch {
  Rollouts rollouts;
  at::Tensor log_probs_pi;  // [T, S, V] of the current policy
  at::Tensor log_probs_mu;  // [T, S, V] of the behaviour policy
};

/// The coefficients c_it [N, T] of `estimator` on `batch` (on-policy: ones);
/// `seed` is SIS's draw. `acceptance_rate`, when given, receives SIS's.
StatusOr<at::Tensor> estimator_coefficients(Estimator estimator, const OffPolicyBatch& batch,
                                            const EstimatorOptions& options, uint64_t seed,
                                            double* acceptance_rate = nullptr);

/// The estimate of each of `groups` consecutive groups of sequences (N a
/// multiple of groups), with `advantages` [N] in place of R (R less a
/// baseline): [groups, 2 S V], theta's gradient then psi's, from the closed
/// form grad_logits log pi(v) = onehot(v) - pi(.).
at::Tensor score_gradients(const AutomatonTask& task, const at::Tensor& log_probs_pi, const Rollouts& rollouts,
                           const at::Tensor& coefficients, const at::Tensor& advantages, int64_t groups);

/// J's exact gradient at `policy` from uniform start states, flattened like
/// score_gradients' rows.
at::Tensor exact_gradient(const AutomatonTask& task, const TabularPolicy& policy, int64_t length);

}  // namespace clustertwin::real::sis
