// SIS's acceptance test: identical policies accept everything; with the exact
// envelope the accepted tokens follow the current policy (chi-square at a
// fixed seed); gradients flow through the ratio, not the draw; bad input is
// one line naming the tensor and its shape.

#include "real/sis/selective_sampling.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <vector>

namespace clustertwin::real::sis {
namespace {

at::Tensor log_softmax_rows(const at::Tensor& logits) {
  return at::log_softmax(logits, -1);
}

// B x T positions, each with its own pair of full distributions over V tokens, and y drawn from mu.
struct Positions {
  at::Tensor full_old, full_new, y, logp_old, logp_new;
};
Positions draw(int64_t b, int64_t t, int64_t v, double drift, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  Positions p;
  const at::Tensor base = at::randn({b, t, v}, g, at::TensorOptions().dtype(at::kDouble));
  p.full_old = log_softmax_rows(base);
  p.full_new = log_softmax_rows(base + drift * at::randn({b, t, v}, g, at::TensorOptions().dtype(at::kDouble)));
  p.y = at::multinomial(p.full_old.exp().reshape({b * t, v}), 1, true, g).reshape({b, t});
  p.logp_old = p.full_old.gather(-1, p.y.unsqueeze(-1)).squeeze(-1);
  p.logp_new = p.full_new.gather(-1, p.y.unsqueeze(-1)).squeeze(-1);
  return p;
}

SisInputs exact_inputs(const Positions& p) {
  SisInputs in;
  in.logp_new = p.logp_new;
  in.logp_old = p.logp_old;
  in.full_logp_old = p.full_old;
  in.full_logp_new = p.full_new;
  return in;
}

SisInputs topk_inputs(const Positions& p, int64_t k) {
  SisInputs in;
  in.logp_new = p.logp_new;
  in.logp_old = p.logp_old;
  const auto [values, indices] = p.full_old.topk(k, -1);
  in.topk_logp_old = values;
  in.topk_logp_new = p.full_new.gather(-1, indices);
  in.in_topk = (indices == p.y.unsqueeze(-1)).any(-1);
  in.vocab = p.full_old.size(-1);
  return in;
}

TEST(SisTest, IdenticalPoliciesAcceptEveryTokenWithWeightOne) {
  Positions p = draw(4, 32, 16, 0.0, 1);
  for (const SisInputs& in : {exact_inputs(p), topk_inputs(p, 16)}) {
    auto r = sis_accept(in, 7);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_TRUE(r->accepted.all().item<bool>());
    EXPECT_DOUBLE_EQ(r->acceptance_rate, 1.0);
    const at::Tensor w = sis_weights(*r, at::full({4, 32}, 3.0, at::kDouble));
    EXPECT_TRUE(at::allclose(w, at::ones_like(w), 0, 1e-12));
  }
}

// Rejection sampling with the exact envelope: accepted tokens are distributed as pi_theta, and the
// acceptance rate is 1/M. One position's distributions repeated 40,000 times.
TEST(SisTest, ExactEnvelopeAcceptsTokensDistributedAsTheCurrentPolicy) {
  const int64_t n = 40000, v = 6;
  const at::Tensor old_row = at::log(at::tensor({0.30, 0.25, 0.20, 0.12, 0.08, 0.05}, at::kDouble));
  const at::Tensor new_row = at::log(at::tensor({0.10, 0.15, 0.20, 0.20, 0.15, 0.20}, at::kDouble));
  Positions p;
  p.full_old = old_row.expand({1, n, v}).contiguous();
  p.full_new = new_row.expand({1, n, v}).contiguous();
  at::Generator g = at::detail::createCPUGenerator(3);
  p.y = at::multinomial(old_row.exp(), n, true, g).unsqueeze(0);
  p.logp_old = p.full_old.gather(-1, p.y.unsqueeze(-1)).squeeze(-1);
  p.logp_new = p.full_new.gather(-1, p.y.unsqueeze(-1)).squeeze(-1);
  auto r = sis_accept(exact_inputs(p), 11);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const double m = (new_row - old_row).exp().max().item<double>();  // 4 (0.20 / 0.05)
  EXPECT_NEAR(r->acceptance_rate, 1 / m, 0.01);
  const at::Tensor kept = p.y.masked_select(r->accepted);
  const at::Tensor counts = at::bincount(kept, {}, v).to(at::kDouble);
  const at::Tensor expected = new_row.exp() * static_cast<double>(kept.numel());
  const double chi2 = ((counts - expected).square() / expected).sum().item<double>();
  // The 0.1% critical value of chi-square with 5 degrees of freedom.
  EXPECT_LT(chi2, 20.515) << counts;
  // Against the behaviour policy the same test fails by far: the draw changed the distribution.
  const at::Tensor expected_old = old_row.exp() * static_cast<double>(kept.numel());
  EXPECT_GT(((counts - expected_old).square() / expected_old).sum().item<double>(), 1000);
}

TEST(SisTest, GradientFlowsThroughTheRatioNotTheAcceptance) {
  Positions p = draw(2, 8, 8, 0.5, 5);
  at::Tensor logp_new = p.logp_new.clone().requires_grad_(true);
  SisInputs in = topk_inputs(p, 4);
  in.logp_new = logp_new;
  auto r = sis_accept(in, 2);
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->accept_prob.requires_grad());
  EXPECT_FALSE(r->log_envelope.requires_grad());
  EXPECT_TRUE(r->log_ratio.requires_grad());
  const at::Tensor base = at::exp(r->log_ratio);  // token IS as the base weight
  const at::Tensor w = sis_weights(*r, base);
  w.sum().backward();
  // d/dlogp of an accepted token's weight is 1 (exp(x - sg(x))); of a rejected one, its ratio.
  const at::Tensor expected = at::where(r->accepted, at::ones_like(base), base.detach());
  EXPECT_TRUE(at::allclose(logp_new.grad(), expected, 1e-12, 1e-12));
  // The draw is seeded: the same seed gives the same decisions, another seed others.
  EXPECT_TRUE(at::equal(sis_accept(in, 2)->accepted, r->accepted));
  EXPECT_FALSE(at::equal(sis_accept(in, 3)->accepted, r->accepted));
}

TEST(SisTest, PaddingAndTokensOutsideTheTopKAreNeverAccepted) {
  Positions p = draw(2, 16, 32, 0.2, 9);
  SisInputs in = topk_inputs(p, 2);
  in.mask = at::ones({2, 16}, at::kBool);
  in.mask.index_put_({1, at::indexing::Slice(10, 16)}, false);
  in.logp_new.index_put_({1, 12}, std::numeric_limits<double>::quiet_NaN());  // padding may hold anything
  auto r = sis_accept(in, 4);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_FALSE(r->accepted.index({1, at::indexing::Slice(10, 16)}).any().item<bool>());
  EXPECT_FALSE((r->accepted & ~in.in_topk).any().item<bool>());
  const at::Tensor w = sis_weights(*r, at::full({2, 16}, 2.0, at::kDouble), in.mask);
  EXPECT_EQ(w.index({1, at::indexing::Slice(10, 16)}).abs().sum().item<double>(), 0.0);
}

TEST(SisTest, BadInputNamesTheTensorAndItsShape) {
  Positions p = draw(2, 5, 8, 0.1, 1);
  SisInputs in = topk_inputs(p, 3);
  in.logp_old = p.logp_old.slice(1, 0, 4);
  EXPECT_EQ(sis_accept(in, 0).status().message(), "sis: logp_old has shape [2, 4], expected [2, 5] (like logp_new)");
  in = topk_inputs(p, 3);
  in.vocab = 2;
  EXPECT_EQ(sis_accept(in, 0).status().message(),
            "sis: topk_logp_old [2, 5, 3] has K = 3, more than the vocabulary of 2");
  in = topk_inputs(p, 3);
  in.topk_logp_new = in.topk_logp_new.slice(2, 0, 2);
  EXPECT_EQ(sis_accept(in, 0).status().message(),
            "sis: topk_logp_new has shape [2, 5, 2], expected [2, 5, 3] (like topk_logp_old)");
  in = topk_inputs(p, 3);
  in.logp_new = p.logp_new.clone();
  in.logp_new.index_put_({1, 3}, std::numeric_limits<double>::infinity());
  EXPECT_EQ(sis_accept(in, 0).status().message(), "sis: logp_new [2, 5] has a non-finite value at [1, 3]");
  in = exact_inputs(p);
  in.full_logp_new = p.full_new.clone();
  in.full_logp_new.index_put_({0, 2, 5}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(sis_accept(in, 0).status().message(), "sis: full_logp_new [2, 5, 8] has a non-finite value at [0, 2]");
  in = exact_inputs(p);
  in.logp_new = p.logp_new.unsqueeze(0);
  EXPECT_EQ(sis_accept(in, 0).status().message(), "sis: logp_new has shape [1, 2, 5], expected [B, T]");
}

// Given draws replace the seed's: zeros accept every token the test lets
// through (probability > 0), ones none; the same draws give the same
// acceptance whatever the seed; a wrong shape is named.
TEST(SisTest, GivenDrawsReplaceTheSeed) {
  Positions p = draw(2, 6, 8, 0.5, 3);
  SisInputs in = topk_inputs(p, 4);
  in.draws = at::zeros({2, 6}, at::kDouble);
  auto all = sis_accept(in, 1);
  ASSERT_TRUE(all.is_ok()) << all.status().message();
  EXPECT_TRUE(at::equal(all->accepted, all->accept_prob > 0));
  in.draws = at::ones({2, 6}, at::kDouble);
  EXPECT_FALSE(sis_accept(in, 1)->accepted.any().item<bool>());
  in.draws = at::rand({2, 6}, at::TensorOptions().dtype(at::kDouble));
  EXPECT_TRUE(at::equal(sis_accept(in, 1)->accepted, sis_accept(in, 99)->accepted));
  in.draws = at::zeros({2, 5}, at::kDouble);
  EXPECT_EQ(sis_accept(in, 0).status().message(), "sis: draws has shape [2, 5], expected [2, 6] (like logp_new)");
}

// The CPU path's fused envelope equals the plain max of the differences, in float and double; a non-finite entry
// at a real position of either top-K tensor is named and located, one at a padded position is allowed.
TEST(SisTest, FusedEnvelopeMatchesTheTensorOpsAndFindsNonFiniteEntries) {
  Positions p = draw(3, 7, 16, 0.4, 5);
  for (at::ScalarType type : {at::kFloat, at::kDouble}) {
    SisInputs in = topk_inputs(p, 5);
    in.topk_logp_old = in.topk_logp_old.to(type);
    in.topk_logp_new = in.topk_logp_new.to(type);
    auto r = sis_accept(in, 1);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_TRUE(r->log_envelope.equal((in.topk_logp_new - in.topk_logp_old).amax(-1)));
  }
  SisInputs in = topk_inputs(p, 5);
  in.topk_logp_old = in.topk_logp_old.clone();
  in.topk_logp_old.index_put_({2, 6, 4}, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(sis_accept(in, 0).status().message(), "sis: topk_logp_old [3, 7, 5] has a non-finite value at [2, 6]");
  in.mask = at::ones({3, 7}, at::kBool);
  in.mask.index_put_({2, 6}, false);  // padding: anything goes there
  EXPECT_TRUE(sis_accept(in, 0).is_ok());
  in = topk_inputs(p, 5);
  in.in_topk = at::Tensor();
  EXPECT_EQ(sis_accept(in, 0).status().message(), "sis: in_topk is missing");
}

}  // namespace
}  // namespace clustertwin::real::sis
