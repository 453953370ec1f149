// SparseGPT's row loop on plain arrays: its rounding rule, and the loop itself
// on a block small enough to follow by hand.

#include "real/igsp/sparsegpt_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

namespace clustertwin::real::igsp {
namespace {

// One row of 40 columns, column 0 pruned with H_inv[0,0] = 1, so
// err = w_0 = 1 + eps, and every later w_j = 1 + 2 eps with H_inv[0,j] = 1 + eps:
// (1 + eps)^2 = 1 + 2 eps + eps^2 rounds to 1 + 2 eps in float (eps = 2^-13,
// eps^2 = 2^-26 is under half an ulp of 1, 2^-24), so w_j - err x H_inv[0,j]
// is exactly 0 when the product is rounded first, as libtorch's addr_ rounds
// it, and -eps^2 had the compiler fused them into one multiply-add.
TEST(SparseGptRowsTest, RoundsEachProductBeforeTheDifference) {
  constexpr int64_t kLength = 40;
  const float eps = std::ldexp(1.0f, -13);
  std::vector<float> h(kLength * kLength, 0), w(kLength, 1 + 2 * eps), err(kLength);
  for (int64_t i = 0; i < kLength; ++i)
    h[static_cast<size_t>(i * kLength + i)] = 1;
  for (int64_t j = 1; j < kLength; ++j)
    h[static_cast<size_t>(j)] = 1 + eps;
  w[0] = 1 + eps;
  std::unique_ptr<bool[]> pruned(new bool[kLength]());
  pruned[0] = true;
  SparseGptBlockRows<float> block;
  block.h_inv = h.data();
  block.h_inv_stride = kLength;
  block.count = kLength;
  block.weight = w.data();
  block.pruned = pruned.get();
  block.err = err.data();
  sparsegpt_block_rows(block, 0, 1);
  EXPECT_EQ(err[0], 1 + eps);
  for (int64_t j = 0; j < kLength; ++j)
    EXPECT_EQ(w[static_cast<size_t>(j)], 0.0f) << "column " << j;  // column 0: pruned, so exactly 0
}

// Two columns, both pruned: err_0 = w_0 / d_0, w_1 -= err_0 x H_inv[0,1],
// err_1 = w_1 / d_1. With w = (3, 5), H_inv = [[2, 1], [0, 4]]:
// err_0 = 1.5, w_1 = 5 - 1.5 = 3.5, err_1 = 0.875; both weights end at 0.
// Column 1 kept instead: err_1 = 0 and w_1 = 3.5 stays.
TEST(SparseGptRowsTest, SpreadsEachPrunedColumnsErrorOverTheLaterOnes) {
  for (bool prune_second : {true, false}) {
    const std::vector<double> h = {2, 1, 0, 4};
    std::vector<double> w = {3, 5}, err(2);
    bool pruned[2] = {true, prune_second};
    SparseGptBlockRows<double> block;
    block.h_inv = h.data();
    block.h_inv_stride = 2;
    block.count = 2;
    block.weight = w.data();
    block.pruned = pruned;
    block.err = err.data();
    sparsegpt_block_rows(block, 0, 1);
    EXPECT_EQ(err[0], 1.5);
    EXPECT_EQ(err[1], prune_second ? 0.875 : 0.0);
    EXPECT_EQ(w[0], 0.0);
    EXPECT_EQ(w[1], prune_second ? 0.0 : 3.5);
  }
}

// N:M chosen in the loop: 1 of every 2, the lower w^2 / d^2 after the earlier
// updates. w = (3, 5, 1, 2), H_inv = identity x 2 except H_inv[0,2] = 4:
// group 1 prunes column 0 (9/4 < 25/4), err_0 = 1.5 moves w_2 to 1 - 6 = -5;
// group 2 then compares 25/4 with 4/4 and prunes column 3, not column 2.
TEST(SparseGptRowsTest, ChoosesNOfMAfterTheEarlierUpdates) {
  std::vector<double> h(16, 0);
  for (int i = 0; i < 4; ++i)
    h[static_cast<size_t>(i * 4 + i)] = 2;
  h[2] = 4;
  std::vector<double> w = {3, 5, 1, 2}, err(4);
  bool pruned[4] = {};
  SparseGptBlockRows<double> block;
  block.h_inv = h.data();
  block.h_inv_stride = 4;
  block.count = 4;
  block.weight = w.data();
  block.pruned = pruned;
  block.err = err.data();
  block.n = 1;
  block.m = 2;
  sparsegpt_block_rows(block, 0, 1);
  EXPECT_EQ(std::vector<bool>(pruned, pruned + 4), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(w, (std::vector<double>{0, 5, -5, 0}));
}

}  // namespace
}  // namespace clustertwin::real::igsp
