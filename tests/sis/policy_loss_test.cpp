// The policy losses: on-policy values, clipping, GSPO's geometric mean,
// micro-batch normalisation, and SIS's plug-in (all accepted = on-policy).

#include "real/sis/policy_loss.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>

namespace clustertwin::real::sis {
namespace {

LossBatch batch_of(const at::Tensor& logp_new, const at::Tensor& logp_old, const at::Tensor& advantages,
                   const at::Tensor& mask) {
  LossBatch b;
  b.tokens.logp_new = logp_new;
  b.tokens.logp_old = logp_old;
  b.tokens.mask = mask;
  b.advantages = advantages;
  return b;
}

LossOptions kind(LossKind k) {
  LossOptions o;
  o.kind = k;
  return o;
}

// On-policy (pi = mu) every loss is minus the normalised advantage sum, and its gradient REINFORCE's.
TEST(PolicyLossTest, OnPolicyEveryLossIsTheAdvantageMean) {
  const at::Tensor logp = at::log(at::full({2, 3}, 0.5, at::kDouble));
  const at::Tensor mask = at::tensor({1, 1, 1, 1, 1, 0}, at::kDouble).reshape({2, 3});
  const at::Tensor adv = at::tensor({1.0, -2.0}, at::kDouble);
  for (LossKind k : {LossKind::kPpo, LossKind::kGspo, LossKind::kTis, LossKind::kMis, LossKind::kIcePop}) {
    auto r = policy_loss(batch_of(logp, logp, adv, mask), kind(k));
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_NEAR(r->loss.item<double>(), -(1.0 + -2.0) / 2, 1e-12) << loss_kind_name(k);  // per-sequence means
  }
  LossBatch decoupled = batch_of(logp, logp, adv, mask);
  decoupled.logp_prox = logp;
  EXPECT_NEAR(policy_loss(decoupled, kind(LossKind::kDecoupled))->loss.item<double>(), 0.5, 1e-12);
  auto dapo = policy_loss(batch_of(logp, logp, adv, mask), kind(LossKind::kDapo));
  EXPECT_NEAR(dapo->loss.item<double>(), -(3 * 1.0 + 2 * -2.0) / 5, 1e-12);  // token mean
}

// A positive advantage with the ratio above 1 + eps: the clip binds and the token has no gradient.
TEST(PolicyLossTest, ClippedTokensCarryNoGradient) {
  at::Tensor logp_new = at::log(at::tensor({0.9, 0.5}, at::kDouble).reshape({1, 2})).requires_grad_(true);
  const at::Tensor logp_old = at::log(at::tensor({0.5, 0.5}, at::kDouble).reshape({1, 2}));  // ratios 1.8 and 1
  auto r =
      policy_loss(batch_of(logp_new, logp_old, at::tensor({1.0}, at::kDouble), at::ones({1, 2})), kind(LossKind::kPpo));
  ASSERT_TRUE(r.is_ok());
  r->loss.backward();
  EXPECT_EQ(logp_new.grad()[0][0].item<double>(), 0.0);
  EXPECT_NEAR(logp_new.grad()[0][1].item<double>(), -0.5, 1e-12);  // -(1/2) * ratio 1 * A 1
  EXPECT_DOUBLE_EQ(r->clip_fraction, 0.5);
}

TEST(PolicyLossTest, GspoRatioIsTheGeometricMean) {
  const at::Tensor lr = at::tensor({0.3, -0.1, 0.7, 0.0, -0.4, 0.2, 5.0, 9.0}, at::kDouble).reshape({2, 4});
  const at::Tensor mask = at::tensor({1, 1, 1, 1, 1, 1, 0, 0}, at::kDouble).reshape({2, 4});
  const at::Tensor s = gspo_sequence_ratio(lr, mask);
  EXPECT_NEAR(s[0].item<double>(), std::pow(std::exp(0.3) * std::exp(-0.1) * std::exp(0.7) * 1.0, 0.25), 1e-12);
  EXPECT_NEAR(s[1].item<double>(), std::sqrt(std::exp(-0.4) * std::exp(0.2)), 1e-12);
  // A long sequence of small ratios: exp(sum) would vanish, the geometric mean does not.
  const at::Tensor long_lr = at::full({1, 2000}, -0.5, at::kDouble);
  EXPECT_NEAR(gspo_sequence_ratio(long_lr, at::ones({1, 2000}, at::kDouble))[0].item<double>(), std::exp(-0.5), 1e-12);
}

// Summing micro-batch losses normalised by the whole batch's counts gives the whole batch's loss.
TEST(PolicyLossTest, MicroBatchesAddUpToTheBatch) {
  at::Generator g = at::detail::createCPUGenerator(1);
  const at::Tensor logp_old = -at::rand({4, 6}, g, at::TensorOptions().dtype(at::kDouble)) - 0.1;
  const at::Tensor logp_new = logp_old + 0.3 * at::randn({4, 6}, g, at::TensorOptions().dtype(at::kDouble));
  const at::Tensor mask = (at::rand({4, 6}, g, at::TensorOptions().dtype(at::kDouble)) > 0.2).to(at::kDouble);
  const at::Tensor adv = at::randn({4}, g, at::TensorOptions().dtype(at::kDouble));
  for (LossKind k : {LossKind::kPpo, LossKind::kDapo, LossKind::kGspo, LossKind::kTis}) {
    const double whole = policy_loss(batch_of(logp_new, logp_old, adv, mask), kind(k))->loss.item<double>();
    double parts = 0;
    for (int64_t first : {0, 2}) {
      LossBatch micro = batch_of(logp_new.slice(0, first, first + 2), logp_old.slice(0, first, first + 2),
                                 adv.slice(0, first, first + 2), mask.slice(0, first, first + 2));
      micro.total_sequences = 4;
      micro.total_tokens = mask.sum().item<int64_t>();
      parts += policy_loss(micro, kind(k))->loss.item<double>();
    }
    EXPECT_NEAR(parts, whole, 1e-12) << loss_kind_name(k);
  }
}

// SIS with identical policies accepts every token: every loss equals its on-policy value and gradient.
TEST(PolicyLossTest, SisWithEveryTokenAcceptedIsOnPolicy) {
  at::Generator g = at::detail::createCPUGenerator(2);
  const at::Tensor full = at::log_softmax(at::randn({2, 5, 8}, g, at::TensorOptions().dtype(at::kDouble)), -1);
  const at::Tensor y = at::zeros({2, 5}, at::kLong);
  at::Tensor logp_new = full.gather(-1, y.unsqueeze(-1)).squeeze(-1).clone().requires_grad_(true);
  LossBatch b = batch_of(logp_new, logp_new.detach(), at::tensor({0.5, -1.0}, at::kDouble), at::ones({2, 5}));
  b.tokens.full_logp_old = full;
  b.tokens.full_logp_new = full;
  LossOptions o = kind(LossKind::kGspo);
  o.sis = true;
  auto r = policy_loss(b, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->acceptance_rate, 1.0);
  EXPECT_NEAR(r->loss.item<double>(), -(0.5 - 1.0) / 2, 1e-12);
  r->loss.backward();
  // d(-J)/dlogp = -A / (|o| G) per token.
  EXPECT_NEAR(logp_new.grad()[0][0].item<double>(), -0.5 / 5 / 2, 1e-12);
  EXPECT_NEAR(logp_new.grad()[1][3].item<double>(), 1.0 / 5 / 2, 1e-12);
}

// The switch for which ratio SIS tests: a far-off trainer-side pi_old would reject tokens, but the engine
// ratio tested here is between identical distributions, so every token is accepted.
TEST(PolicyLossTest, SisTestsTheRatioItIsGiven) {
  at::Generator g = at::detail::createCPUGenerator(3);
  const auto f = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor full_new = at::log_softmax(at::randn({4, 6, 8}, g, f), -1);
  const at::Tensor full_old = at::log_softmax(3 * at::randn({4, 6, 8}, g, f), -1);
  const at::Tensor y = at::randint(8, {4, 6, 1}, g, at::TensorOptions().dtype(at::kLong));
  const at::Tensor logp_new = full_new.gather(-1, y).squeeze(-1);
  LossBatch b = batch_of(logp_new, full_old.gather(-1, y).squeeze(-1), at::ones({4}, f), at::ones({4, 6}));
  b.tokens.full_logp_new = full_new;
  b.tokens.full_logp_old = full_old;
  LossOptions o = kind(LossKind::kPpo);
  o.sis = true;
  const double lag = policy_loss(b, o)->acceptance_rate;
  EXPECT_LT(lag, 0.9);
  b.sis_test = b.tokens;
  b.sis_test.logp_old = logp_new;
  b.sis_test.full_logp_old = full_new;
  EXPECT_DOUBLE_EQ(policy_loss(b, o)->acceptance_rate, 1.0);
}

// Redrawing each epoch changes the accepted set; keeping the draw repeats it.
TEST(PolicyLossTest, SisDrawIsRedoneEachEpochOnlyWhenAsked) {
  LossOptions o;
  o.seed = 11;
  o.epoch = 0;
  const uint64_t first = sis_draw_seed(o);
  o.epoch = 1;
  EXPECT_NE(sis_draw_seed(o), first);
  o.sis_redraw_each_epoch = false;
  EXPECT_EQ(sis_draw_seed(o), 11u);
  o.epoch = 0;
  EXPECT_EQ(sis_draw_seed(o), 11u);
}

TEST(PolicyLossTest, BadInputIsOneLine) {
  const at::Tensor logp = at::zeros({2, 3}, at::kDouble);
  EXPECT_EQ(policy_loss(batch_of(logp, logp, at::zeros({3}, at::kDouble), at::ones({2, 3})), kind(LossKind::kPpo))
                .status()
                .message(),
            "policy loss: advantages must be [2], one per sequence");
  EXPECT_EQ(policy_loss(batch_of(logp, logp, at::zeros({2}, at::kDouble), at::ones({2, 3})), kind(LossKind::kDecoupled))
                .status()
                .message(),
            "policy loss: decoupled needs logp_prox shaped like logp_new");
  EXPECT_FALSE(loss_kind_from_name("reinforce").is_ok());
  EXPECT_EQ(*loss_kind_from_name("grpo"), LossKind::kPpo);
}

}  // namespace
}  // namespace clustertwin::real::sis
