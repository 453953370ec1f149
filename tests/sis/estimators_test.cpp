// The estimators of the SIS study: the closed-form score gradients equal
// autograd's, and the coefficients are what each estimator's formula says.

#include "real/sis/estimators.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>

namespace clustertwin::real::sis {
namespace {

struct BatchFixture {
  AutomatonTask task = *make_automaton_task(6, 4);
  TabularPolicy pi = random_policy(task, 0.5, 1);
  TabularPolicy mu = drifted_policy(pi, 0.7, 2);
  int64_t length = 9, n = 12;
  OffPolicyBatch batch;
  BatchFixture() {
    at::Generator g = at::detail::createCPUGenerator(3);
    batch.log_probs_pi = position_log_probs(pi, length);
    batch.log_probs_mu = position_log_probs(mu, length);
    batch.rollouts =
        sample_rollouts(task, batch.log_probs_mu, at::randint(4, {n}, g, at::TensorOptions().dtype(at::kLong)), g);
  }
};

TEST(EstimatorsTest, ScoreGradientsEqualAutograd) {
  BatchFixture f;
  const at::Tensor c = *estimator_coefficients(Estimator::kTokenIs, f.batch, {}, 0);
  const at::Tensor advantages = f.batch.rollouts.rewards - 0.3;
  const at::Tensor closed =
      score_gradients(f.task, f.batch.log_probs_pi, f.batch.rollouts, c, advantages, 3);  // 3 groups of 4
  const at::Tensor theta = f.pi.theta.clone().requires_grad_(true), psi = f.pi.psi.clone().requires_grad_(true);
  const at::Tensor logp = rollout_token_log_probs(position_log_probs({theta, psi}, f.length), f.batch.rollouts);
  for (int64_t group = 0; group < 3; ++group) {
    const at::Tensor rows = at::arange(4 * group, 4 * group + 4, at::kLong);
    // (1/4) sum_i A_i sum_t c_it log pi(y_it) over the group's sequences: its gradient is the estimate.
    const at::Tensor surrogate =
        (c.index_select(0, rows) * advantages.index_select(0, rows).unsqueeze(1) * logp.index_select(0, rows)).sum() /
        4;
    surrogate.backward({}, /*retain_graph=*/true);
    const at::Tensor expected = at::cat({theta.grad().reshape({-1}), psi.grad().reshape({-1})});
    theta.mutable_grad() = at::Tensor();
    psi.mutable_grad() = at::Tensor();
    EXPECT_LT((closed[group] - expected).abs().max().item<double>(), 1e-12) << "group " << group;
  }
}

TEST(EstimatorsTest, CoefficientsFollowTheirFormulas) {
  BatchFixture f;
  const at::Tensor log_w = rollout_token_log_probs(f.batch.log_probs_pi, f.batch.rollouts) -
                           rollout_token_log_probs(f.batch.log_probs_mu, f.batch.rollouts);
  const at::Tensor w = log_w.exp();
  auto coeff = [&](Estimator e) { return *estimator_coefficients(e, f.batch, {}, 9); };
  EXPECT_TRUE(coeff(Estimator::kOnPolicy).equal(at::ones_like(w)));
  EXPECT_TRUE(coeff(Estimator::kNaive).equal(at::ones_like(w)));
  EXPECT_TRUE(at::allclose(coeff(Estimator::kTokenIs), w));
  EXPECT_TRUE(at::allclose(coeff(Estimator::kSequenceIs).select(1, 0), log_w.sum(1).exp()));
  // GSPO's sequence weight is the geometric mean of the token ratios.
  EXPECT_TRUE(at::allclose(coeff(Estimator::kGspo).select(1, 3), w.log().mean(1).exp()));
  EXPECT_TRUE(at::allclose(coeff(Estimator::kTis), at::clamp_max(w, 2.0)));
  EXPECT_TRUE(coeff(Estimator::kMis).le(2.0).all().item<bool>());
  const at::Tensor icepop = coeff(Estimator::kIcePop);
  EXPECT_TRUE(((icepop == 0) | ((icepop >= 0.5) & (icepop <= 5))).all().item<bool>());
  // SIS: each token is either accepted (1) or keeps token IS's weight; with drift 0.7 both happen.
  double rate = -1;
  const at::Tensor sis = *estimator_coefficients(Estimator::kSisExact, f.batch, {}, 9, &rate);
  const at::Tensor accepted = (sis == 1) & (w != 1);
  EXPECT_TRUE(((sis == 1) | at::isclose(sis, w)).all().item<bool>());
  EXPECT_GT(rate, 0.2);
  EXPECT_LT(rate, 0.95);
  EXPECT_NEAR(accepted.to(at::kDouble).mean().item<double>(), rate, 1e-12);
}

TEST(EstimatorsTest, NamesRoundTrip) {
  for (Estimator e : all_estimators())
    EXPECT_EQ(*estimator_from_name(estimator_name(e)), e);
  EXPECT_EQ(
      estimator_from_name("vtrace").status().message(),
      "estimator 'vtrace': unknown (allowed: on-policy, naive, seq-is, token-is, tis, mis, icepop, gspo, sis-exact, "
      "sis-topk)");
}

}  // namespace
}  // namespace clustertwin::real::sis
