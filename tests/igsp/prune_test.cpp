// IGSP's pruning kernels: SparseGPT against Wanda, magnitude and a dense
// optimal-brain-surgeon solve; exact mask counts; damping and bad input.

#include "real/igsp/prune.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace clustertwin::real::igsp {
namespace {

const std::string kLayer = "layers.3.mlp.fc1";

// Correlated inputs with uneven column scales, as a transformer's activations:
// X = Z A S with Z [tokens, columns] standard normal, A a random mixing
// (so H is far from diagonal and SparseGPT's updates matter) and S a diagonal
// of log-normal scales (so the input norms Wanda weighs by differ).
at::Tensor correlated_inputs(int64_t tokens, int64_t columns, at::ScalarType dtype = at::kFloat) {
  const auto options = at::TensorOptions().dtype(dtype);
  const at::Tensor z = at::randn({tokens, columns}, options);
  const at::Tensor a = at::randn({columns, columns}, options) / std::sqrt(static_cast<double>(columns));
  const at::Tensor s = at::randn({columns}, options).exp();
  return z.matmul(a) * s;
}

// H = (2/N) X^T X, directly.
at::Tensor hessian_of(const at::Tensor& x) {
  return x.t().matmul(x) * (2.0 / static_cast<double>(x.size(0)));
}

at::Tensor damped(const at::Tensor& h, double damping) {
  return h + damping * h.diagonal().mean() * at::eye(h.size(0), h.options());
}

// ||W X^T - W' X^T||_F.
double reconstruction_error(const at::Tensor& w, const at::Tensor& pruned, const at::Tensor& x) {
  return (w - pruned).matmul(x.t()).norm().item<double>();
}

double relative_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

PruneResult ok_or_fail(StatusOr<PruneResult> result) {
  EXPECT_TRUE(result.is_ok()) << result.status().message();
  return result.is_ok() ? std::move(result).value() : PruneResult{};
}

PruneOptions unstructured(double sparsity) {
  PruneOptions o;
  o.sparsity = sparsity;
  return o;
}

PruneOptions n_of_m(int n, int m) {
  PruneOptions o;
  o.n = n;
  o.m = m;
  return o;
}

// Pruned entries of `keep` [rows, columns] counted per group of `width` consecutive columns of each row.
at::Tensor pruned_per_group(const at::Tensor& keep, int64_t width) {
  return keep.logical_not().reshape({keep.size(0), keep.size(1) / width, width}).sum(-1);
}

TEST(HessianAccumulatorTest, IsTheRunningAverageOfTwoXXtOverTokens) {
  at::manual_seed(0);
  const at::Tensor x = correlated_inputs(512, 32, at::kDouble);
  HessianAccumulator hessian(kLayer, 32, at::kDouble);
  ColumnNormAccumulator norms(kLayer, 32);
  // Uneven batches, one of them [batch, sequence, columns], as a model's activations.
  for (const at::Tensor& batch : {x.narrow(0, 0, 100), x.narrow(0, 100, 12).view({3, 4, 32}), x.narrow(0, 112, 400)}) {
    ASSERT_TRUE(hessian.add(batch).is_ok());
    ASSERT_TRUE(norms.add(batch).is_ok());
  }
  EXPECT_EQ(hessian.samples(), 512);
  EXPECT_LT(relative_difference(hessian.hessian(), hessian_of(x)), 1e-12);
  EXPECT_EQ(norms.samples(), 512);
  EXPECT_LT(relative_difference(norms.norms(), x.norm(2, {0})), 1e-12);

  // Float, as the reference: 128 batches of 4 tokens stay within 1e-5 of the double result.
  HessianAccumulator in_float(kLayer, 32);
  for (int64_t b = 0; b < 128; ++b)
    ASSERT_TRUE(in_float.add(x.narrow(0, 4 * b, 4).to(at::kFloat)).is_ok());
  EXPECT_LT(relative_difference(in_float.hessian().to(at::kDouble), hessian_of(x)), 1e-5);

  const Status bad = hessian.add(at::zeros({4, 31}));
  EXPECT_EQ(bad.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            kLayer + ": input [4, 31] Float must be floating point with 32 columns in its last dimension");
  EXPECT_EQ(hessian.samples(), 512);
}

TEST(PrunedCountTest, IsTheFloorOfTheExactProduct) {
  EXPECT_EQ(pruned_count(0.6, 64 * 128), 4915);  // 4915.2
  EXPECT_EQ(pruned_count(0.5, 7), 3);            // 3.5
  EXPECT_EQ(pruned_count(0.57, 100), 57);        // 0.57 x 100 = 56.99999999999999 in doubles
  EXPECT_EQ(pruned_count(0.0, 100), 0);
}

// Test 1: on correlated inputs the method that uses H beats the one that uses
// only the input norms, which beats the one that uses neither.
TEST(PruneTest, SparseGptBeatsWandaBeatsMagnitude) {
  at::manual_seed(0);
  const at::Tensor x = correlated_inputs(512, 256);
  const at::Tensor w = at::randn({64, 256});
  HessianAccumulator hessian(kLayer, 256);
  ColumnNormAccumulator norms(kLayer, 256);
  ASSERT_TRUE(hessian.add(x).is_ok());
  ASSERT_TRUE(norms.add(x).is_ok());

  for (const double sparsity : {0.5, 0.6}) {
    SCOPED_TRACE("sparsity " + std::to_string(sparsity));
    const PruneOptions o = unstructured(sparsity);
    const double e_sparsegpt =
        reconstruction_error(w, ok_or_fail(sparsegpt(w, hessian.hessian(), o, kLayer)).weight, x);
    const double e_wanda = reconstruction_error(w, ok_or_fail(wanda(w, norms.norms(), o, kLayer)).weight, x);
    const double e_magnitude = reconstruction_error(w, ok_or_fail(magnitude(w, o, kLayer)).weight, x);
    EXPECT_LT(e_sparsegpt, e_wanda);
    EXPECT_LT(e_wanda, e_magnitude);
    std::printf("sparsity %.1f: ||WX - W'X||: sparsegpt %.1f < wanda %.1f < magnitude %.1f\n", sparsity, e_sparsegpt,
                e_wanda, e_magnitude);
  }
}

// Test 2: unstructured sparsity is exact per SparseGPT block and per Wanda /
// magnitude row, ties included.
TEST(PruneTest, UnstructuredSparsityIsExactPerBlockAndPerRow) {
  at::manual_seed(1);
  const at::Tensor x = correlated_inputs(512, 300);
  const PruneOptions o = unstructured(0.6);
  // The second pair is all ties: equal weights and, with H = I, equal diag(H_inv).
  const std::vector<std::pair<at::Tensor, at::Tensor>> layers = {{at::randn({64, 300}), hessian_of(x)},
                                                                 {at::ones({64, 300}), at::eye(300)}};
  for (const auto& [w, h] : layers) {
    const at::Tensor keep = ok_or_fail(sparsegpt(w, h, o, kLayer)).mask;
    // Blocks of 128, 128 and 44 columns: floor(0.6 x 64 x 128) = floor(4915.2), floor(0.6 x 64 x 44) = floor(1689.6).
    EXPECT_EQ(keep.narrow(1, 0, 128).logical_not().sum().item<int64_t>(), 4915);
    EXPECT_EQ(keep.narrow(1, 128, 128).logical_not().sum().item<int64_t>(), 4915);
    EXPECT_EQ(keep.narrow(1, 256, 44).logical_not().sum().item<int64_t>(), 1689);

    // floor(0.6 x 300) = 180 in every row.
    const at::Tensor per_row = at::full({64, 1}, 180, at::kLong);
    EXPECT_TRUE(at::equal(pruned_per_group(ok_or_fail(wanda(w, x.norm(2, {0}), o, kLayer)).mask, 300), per_row));
    EXPECT_TRUE(at::equal(pruned_per_group(ok_or_fail(magnitude(w, o, kLayer)).mask, 300), per_row));
  }
}

// Test 3: every group of m consecutive columns of every row loses exactly n.
TEST(PruneTest, NOfMMasksPruneExactlyNOfEveryGroup) {
  at::manual_seed(2);
  const at::Tensor x = correlated_inputs(512, 256);
  const at::Tensor w = at::randn({64, 256});
  for (const auto& [n, m] : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}}) {
    SCOPED_TRACE(std::to_string(n) + ":" + std::to_string(m));
    const PruneOptions o = n_of_m(n, m);
    const at::Tensor expected = at::full({64, 256 / m}, n, at::kLong);
    const PruneResult by_sparsegpt = ok_or_fail(sparsegpt(w, hessian_of(x), o, kLayer));
    EXPECT_TRUE(at::equal(pruned_per_group(by_sparsegpt.mask, m), expected));
    EXPECT_TRUE(at::equal(by_sparsegpt.weight.masked_select(by_sparsegpt.mask.logical_not()), at::zeros({64 * 128})));
    EXPECT_TRUE(at::equal(pruned_per_group(ok_or_fail(wanda(w, x.norm(2, {0}), o, kLayer)).mask, m), expected));
    EXPECT_TRUE(at::equal(pruned_per_group(ok_or_fail(magnitude(w, o, kLayer)).mask, m), expected));
  }
}

// The optimal-brain-surgeon solve for a fixed mask, row by row: minimising
// d^T H d with d = w' - w subject to w'_P = 0 sets the gradient in K to zero,
// H_KK d_K + H_KP d_P = 0, so with d_P = -w_P: w'_K = w_K + H_KK^-1 H_KP w_P.
at::Tensor global_obs(const at::Tensor& w, const at::Tensor& h, const at::Tensor& keep) {
  at::Tensor result = at::zeros_like(w);
  for (int64_t r = 0; r < w.size(0); ++r) {
    const at::Tensor k = keep[r].nonzero().squeeze(1), p = keep[r].logical_not().nonzero().squeeze(1);
    const at::Tensor h_kk = h.index_select(0, k).index_select(1, k), h_kp = h.index_select(0, k).index_select(1, p);
    const at::Tensor w_k = w[r].index_select(0, k), w_p = w[r].index_select(0, p);
    result[r].index_copy_(0, k, w_k + at::linalg_solve(h_kk, h_kp.matmul(w_p)));
  }
  return result;
}

// SparseGPT's own definition, with explicit inverses and no Cholesky factor:
// columns are visited left to right and frozen once visited; a pruned column
// i is removed by the OBS update over the columns not yet frozen, with the
// inverse of H restricted to them: w_{i:} -= w_i / G_00 x G_{0,:}, G = (H_{i:,i:})^-1.
at::Tensor sequential_obs(const at::Tensor& w, const at::Tensor& h, const at::Tensor& keep) {
  at::Tensor result = w.clone();
  const int64_t columns = w.size(1);
  for (int64_t i = 0; i < columns; ++i) {
    const at::Tensor g = at::linalg_inv(h.narrow(0, i, columns - i).narrow(1, i, columns - i));
    const at::Tensor removed = result.select(1, i) * keep.select(1, i).logical_not() / g[0][0];
    result.narrow(1, i, columns - i).sub_(at::outer(removed, g[0]));
  }
  return result.masked_fill(keep.logical_not(), 0);
}

// sum over rows of d^T H d / 2, d = W - W'.
double quadratic_loss(const at::Tensor& w, const at::Tensor& pruned, const at::Tensor& h) {
  const at::Tensor d = w - pruned;
  return (d.matmul(h) * d).sum().item<double>() / 2;
}

struct ObsCase {
  at::Tensor x, w, h, h_damped;
  PruneOptions options;
};

// 16 rows x 64 columns, in double, one block (block_size 128 >= 64 columns).
ObsCase obs_case() {
  at::manual_seed(3);
  ObsCase c;
  c.x = correlated_inputs(256, 64, at::kDouble);
  c.w = at::randn({16, 64}, at::kDouble);
  c.h = hessian_of(c.x);
  c.options = unstructured(0.5);
  c.options.compute_dtype = at::kDouble;
  c.h_damped = damped(c.h, c.options.damping);
  return c;
}

// Test 4a: when every row's pruned columns come before its kept ones, no kept
// weight is frozen before the last pruned one, so SparseGPT's sequential
// updates reach the global OBS optimum for the mask.
TEST(PruneTest, SingleBlockMatchesTheObsSolveOfAPrefixMask) {
  const ObsCase c = obs_case();
  // Row r prunes its first 16 + r columns.
  const at::Tensor keep = at::arange(64).unsqueeze(0) >= (at::arange(16) + 16).unsqueeze(1);
  const PruneResult result = ok_or_fail(sparsegpt_with_mask(c.w, c.h, keep, c.options, kLayer));
  EXPECT_TRUE(at::equal(result.mask, keep));
  const double difference = relative_difference(result.weight, global_obs(c.w, c.h_damped, keep));
  EXPECT_LT(difference, 1e-5);
  std::printf("single block vs the dense OBS solve of the same mask: relative difference %.2g\n", difference);
}

// Test 4b: SparseGPT's own (unstructured) mask prunes the lowest OBS scores
// w_i^2 / G_00 (G as in sequential_obs: H_inv[i,i]^2 = G_00); with it SparseGPT
// matches the dense sequential OBS; the global OBS for that mask is a lower
// bound on its loss (20% lower here: SparseGPT is not the optimum for its own
// mask), and the loss it reports is d^T H d / 2 summed over rows (the updates
// are exact).
TEST(PruneTest, SingleBlockMatchesTheSequentialObsOfItsOwnMask) {
  const ObsCase c = obs_case();
  const PruneResult result = ok_or_fail(sparsegpt(c.w, c.h, c.options, kLayer));
  at::Tensor g00 = at::empty({64}, at::kDouble);
  for (int64_t i = 0; i < 64; ++i)
    g00[i] = at::linalg_inv(c.h_damped.narrow(0, i, 64 - i).narrow(1, i, 64 - i))[0][0];
  const at::Tensor score = (c.w.square() / g00.unsqueeze(0)).reshape({-1});
  const at::Tensor threshold = std::get<0>(score.sort()).select(0, 16 * 64 / 2);  // the lowest kept score
  EXPECT_TRUE(at::equal(result.mask, (score >= threshold).view({16, 64})));
  const double difference = relative_difference(result.weight, sequential_obs(c.w, c.h_damped, result.mask));
  EXPECT_LT(difference, 1e-5);
  std::printf("own mask vs the dense sequential OBS: relative difference %.2g\n", difference);
  const double loss = quadratic_loss(c.w, result.weight, c.h_damped);
  EXPECT_NEAR(result.loss, loss, 1e-9 * loss);
  EXPECT_LE(quadratic_loss(c.w, global_obs(c.w, c.h_damped, result.mask), c.h_damped), loss);
}

// The lazy update after each block reorders SparseGPT's updates without
// changing them: for one mask, blocks of 16 give the one-block result.
TEST(PruneTest, LazyBlockUpdatesMatchOneBlock) {
  const ObsCase c = obs_case();
  const PruneResult one_block = ok_or_fail(sparsegpt(c.w, c.h, c.options, kLayer));
  PruneOptions blocks_of_16 = c.options;
  blocks_of_16.block_size = 16;
  const PruneResult blocked = ok_or_fail(sparsegpt_with_mask(c.w, c.h, one_block.mask, blocks_of_16, kLayer));
  EXPECT_LT(relative_difference(blocked.weight, one_block.weight), 1e-10);
  EXPECT_NEAR(blocked.loss, one_block.loss, 1e-10 * one_block.loss);
}

// Test 5: an input column that is always zero has H_ii = 0.
TEST(PruneTest, DeadInputsAreZeroedWithoutNaN) {
  at::manual_seed(4);
  at::Tensor x = correlated_inputs(512, 64);
  x.select(1, 3).zero_();
  x.select(1, 17).zero_();
  const at::Tensor w = at::randn({32, 64});
  for (const PruneResult& result : {ok_or_fail(sparsegpt(w, hessian_of(x), unstructured(0.5), kLayer)),
                                    ok_or_fail(sparsegpt(w, hessian_of(x), n_of_m(2, 4), kLayer))}) {
    EXPECT_TRUE(at::isfinite(result.weight).all().item<bool>());
    EXPECT_TRUE(std::isfinite(result.loss));
    EXPECT_TRUE(at::equal(result.weight.select(1, 3), at::zeros({32})));
    EXPECT_TRUE(at::equal(result.weight.select(1, 17), at::zeros({32})));
  }
  EXPECT_TRUE(at::isfinite(ok_or_fail(wanda(w, x.norm(2, {0}), unstructured(0.5), kLayer)).weight).all().item<bool>());
}

// Test 6: damping is raised tenfold on each failed Cholesky, then gives up
// with one line naming the layer.
TEST(PruneTest, IndefiniteHessianFailsAfterTheRetries) {
  const at::Tensor w = at::ones({8, 64});
  const StatusOr<PruneResult> result = sparsegpt(w, -at::eye(64), unstructured(0.5), kLayer);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), Status::Code::kInvalidArgument);
  // 0.01 x 10^5 = 1000 after the default 5 retries.
  EXPECT_EQ(result.status().message(), kLayer +
                                           ": the Hessian is not positive definite even with damping 1000 (5 retries); "
                                           "use more or different calibration data");
}

TEST(PruneTest, SlightlyIndefiniteHessianSucceedsWithMoreDamping) {
  at::manual_seed(5);
  // Rank 32 of 64, then its smallest eigenvalues pushed to -0.03 m, m = mean diag of the PSD part (float32
  // accumulation leaves such Hessians). mean diag H = 0.97 m: damping 0.01 adds 0.0097 m, too little; 0.1 adds
  // 0.097 m, enough.
  const at::Tensor z = at::randn({32, 64});
  const at::Tensor psd = hessian_of(z);
  const at::Tensor h = psd - 0.03 * psd.diagonal().mean() * at::eye(64);
  const PruneResult result = ok_or_fail(sparsegpt(at::randn({8, 64}), h, unstructured(0.5), kLayer));
  EXPECT_EQ(result.damping_retries, 1);
  EXPECT_DOUBLE_EQ(result.damping, 0.01 * 10);
  EXPECT_TRUE(at::isfinite(result.weight).all().item<bool>());
}

// Test 7: each bad input names the layer, the field and the value.
TEST(PruneTest, BadInputsAreInvalidArgumentsNamingTheField) {
  struct Case {
    std::string name;
    PruneOptions options;
    at::Tensor weight, hessian;
    std::string message;
    bool wanda_and_magnitude;  // the case applies to them too (they take no Hessian)
  };
  const at::Tensor w = at::randn({16, 64}), h = at::eye(64);
  auto with = [](auto change) {
    PruneOptions o;
    change(o);
    return o;
  };
  const std::vector<Case> cases = {
      {"sparsity 1", unstructured(1.0), w, h, "sparsity 1 must be in [0, 1)", true},
      {"sparsity -0.1", unstructured(-0.1), w, h, "sparsity -0.1 must be in [0, 1)", true},
      {"4:4", n_of_m(4, 4), w, h, "n:m 4:4 must have 1 <= n < m", true},
      {"0:4", n_of_m(0, 4), w, h, "n:m 0:4 must have 1 <= n < m", true},
      {"block_size 0", with([](PruneOptions& o) { o.block_size = 0; }), w, h, "block_size 0 must be >= 1", false},
      {"hessian shape", PruneOptions{}, w, at::eye(32),
       "hessian [32, 32] Float must be floating point of shape [64, 64]", false},
      {"1-D weight", PruneOptions{}, at::randn({64}), h, "weight [64] Float must be a 2-D floating-point tensor", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<StatusOr<PruneResult>> results = {sparsegpt(c.weight, c.hessian, c.options, kLayer)};
    if (c.wanda_and_magnitude) {
      results.push_back(wanda(c.weight, at::ones({64}), c.options, kLayer));
      results.push_back(magnitude(c.weight, c.options, kLayer));
    }
    for (const StatusOr<PruneResult>& result : results) {
      ASSERT_FALSE(result.is_ok());
      EXPECT_EQ(result.status().code(), Status::Code::kInvalidArgument);
      EXPECT_EQ(result.status().message(), kLayer + ": " + c.message);
    }
  }
}

// Test 8: sparsity 0 prunes nothing, and with nothing pruned nothing is
// updated. The weight requires grad, as a model's does; the result does not.
TEST(PruneTest, ZeroSparsityLeavesTheWeightUnchanged) {
  at::manual_seed(6);
  const at::Tensor x = correlated_inputs(512, 256);
  const at::Tensor w = at::randn({64, 256}).requires_grad_();
  const PruneOptions o = unstructured(0.0);
  for (const PruneResult& result :
       {ok_or_fail(sparsegpt(w, hessian_of(x), o, kLayer)), ok_or_fail(wanda(w, x.norm(2, {0}), o, kLayer)),
        ok_or_fail(magnitude(w, o, kLayer))}) {
    EXPECT_TRUE(at::equal(result.weight, w));
    EXPECT_TRUE(result.mask.all().item<bool>());
    EXPECT_FALSE(result.weight.requires_grad());
  }
}

}  // namespace
}  // namespace clustertwin::real::igsp
