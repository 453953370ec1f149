// The automaton task's exact programmes against brute-force enumeration of
// every sequence (V = 3, S = 2, T = 4: 81 sequences), and its sampler against
// the exact expectation.

#include "real/sis/automaton_task.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "real/sis/estimators.h"

namespace clustertwin::real::sis {
namespace {

constexpr int64_t kVocab = 3, kStates = 2, kLength = 4;

struct Enumerated {
  double j = 0, success = 0, kl = 0;
  at::Tensor score;  // E_pi[R grad log pi(y)], flattened like exact_gradient
};

// Every sequence from every start state (uniform), its probability under pi and mu, its reward.
Enumerated enumerate(const AutomatonTask& task, const TabularPolicy& pi, const TabularPolicy& mu, double threshold) {
  const at::Tensor theta = pi.theta.detach().clone().requires_grad_(true);
  const at::Tensor psi = pi.psi.detach().clone().requires_grad_(true);
  const at::Tensor lp = position_log_probs({theta, psi}, kLength);
  const at::Tensor lm = position_log_probs(mu, kLength);
  Enumerated e;
  at::Tensor surrogate = at::zeros({}, at::kDouble);
  int64_t total = 1;
  for (int64_t t = 0; t < kLength; ++t)
    total *= kVocab;
  for (int64_t start = 0; start < kStates; ++start) {
    for (int64_t code = 0; code < total; ++code) {
      int64_t s = start, c = code, hits = 0;
      at::Tensor log_pi = at::zeros({}, at::kDouble);
      double log_mu = 0;
      for (int64_t t = 0; t < kLength; ++t, c /= kVocab) {
        const int64_t v = c % kVocab;
        log_pi = log_pi + lp[t][s][v];
        log_mu += lm[t][s][v].item<double>();
        hits += task.reward[s][v].item<double>() > 0;
        s = task.next_state[s][v].item<int64_t>();
      }
      const double p = std::exp(log_pi.item<double>()) / kStates, q = std::exp(log_mu) / kStates;
      const double reward = static_cast<double>(hits) / kLength;
      e.j += p * reward;
      if (reward >= threshold) e.success += p;
      e.kl += q * (log_mu - log_pi.item<double>()) / kLength;  // start states cancel in the log-ratio
      surrogate = surrogate + p * reward * log_pi;             // grad = E_pi[R grad log pi]
    }
  }
  surrogate.backward();
  e.score = at::cat({theta.grad().reshape({-1}), psi.grad().reshape({-1})});
  return e;
}

struct Fixture {
  AutomatonTask task = *make_automaton_task(kVocab, kStates);
  TabularPolicy pi = random_policy(task, 0.8, 3);
  TabularPolicy mu = drifted_policy(pi, 0.5, 4);
  at::Tensor start = at::full({kStates}, 1.0 / kStates, at::kDouble);
};

TEST(AutomatonTaskTest, ProgrammesMatchEnumeration) {
  Fixture f;
  const Enumerated e = enumerate(f.task, f.pi, f.mu, 0.5);
  const at::Tensor lp = position_log_probs(f.pi, kLength), lm = position_log_probs(f.mu, kLength);
  EXPECT_NEAR(expected_reward(f.task, lp, f.start).item<double>(), e.j, 1e-12);
  EXPECT_NEAR(success_probability(f.task, lp, f.start, 0.5), e.success, 1e-12);
  EXPECT_NEAR(per_token_kl(f.task, lm, lp, f.start), e.kl, 1e-12);
  EXPECT_GT(e.kl, 0);
  // The policy-gradient theorem: autograd through the programme equals E_pi[R grad log pi(y)].
  EXPECT_LT((exact_gradient(f.task, f.pi, kLength) - e.score).abs().max().item<double>(), 1e-12);
}

TEST(AutomatonTaskTest, SuccessThresholdCountsWholePositions) {
  Fixture f;
  const at::Tensor lp = position_log_probs(f.pi, kLength);
  // R takes the values 0, 1/4, ..., 1: threshold 0 is certain, and 0.5 and 0.26..0.5 need the same 2 hits.
  EXPECT_NEAR(success_probability(f.task, lp, f.start, 0.0), 1.0, 1e-12);
  EXPECT_NEAR(success_probability(f.task, lp, f.start, 0.26), success_probability(f.task, lp, f.start, 0.5), 1e-15);
  EXPECT_EQ(success_probability(f.task, lp, f.start, 1.01), 0.0);
}

TEST(AutomatonTaskTest, SampledRewardsAverageToJ) {
  Fixture f;
  const at::Tensor lp = position_log_probs(f.pi, kLength);
  at::Generator g = at::detail::createCPUGenerator(5);
  const int64_t n = 40000;
  const Rollouts r = sample_rollouts(f.task, lp, at::randint(kStates, {n}, g, at::TensorOptions().dtype(at::kLong)), g);
  const double j = expected_reward(f.task, lp, f.start).item<double>();
  const double se = r.rewards.std().item<double>() / std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(r.rewards.mean().item<double>(), j, 4 * se);
  // Each recorded state follows the automaton from the one before.
  const at::Tensor next =
      f.task.next_state.index({r.states.slice(1, 0, kLength - 1), r.tokens.slice(1, 0, kLength - 1)});
  EXPECT_TRUE(next.equal(r.states.slice(1, 1, kLength)));
}

TEST(AutomatonTaskTest, BadSizesNameTheField) {
  EXPECT_EQ(make_automaton_task(1, 3).status().message(), "automaton task: vocab 1 must be >= 2");
  EXPECT_EQ(make_automaton_task(4, 0).status().message(), "automaton task: states 0 must be >= 1");
}

}  // namespace
}  // namespace clustertwin::real::sis
