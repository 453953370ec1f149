// models/nestpipe/batch.h: a batch's split into micro-batches.

#include "models/nestpipe/batch.h"

#include <gtest/gtest.h>

#include <numeric>

namespace clustertwin::models::nestpipe {
namespace {

TEST(BatchTest, AnEvenSplitIsEqual) {
  EXPECT_EQ(micro_batch_sizes(12, 4), (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(micro_batch_sizes(5, 1), (std::vector<int>{5}));
  EXPECT_EQ(micro_batch_sizes(3, 3), (std::vector<int>{1, 1, 1}));
}

TEST(BatchTest, TheRemainderGoesToTheFirstMicroBatches) {
  // 14 = 4 x 3 + 2: the first 2 micro-batches take one more.
  EXPECT_EQ(micro_batch_sizes(14, 4), (std::vector<int>{4, 4, 3, 3}));
  EXPECT_EQ(micro_batch_sizes(7, 3), (std::vector<int>{3, 2, 2}));
}

TEST(BatchTest, SizesSumToTheBatchAndDifferByAtMostOne) {
  for (int samples = 1; samples <= 40; ++samples) {
    for (int m = 1; m <= samples; ++m) {
      const std::vector<int> sizes = micro_batch_sizes(samples, m);
      ASSERT_EQ(static_cast<int>(sizes.size()), m);
      EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), 0), samples) << samples << "/" << m;
      EXPECT_LE(sizes.front() - sizes.back(), 1) << samples << "/" << m;
      EXPECT_TRUE(std::is_sorted(sizes.rbegin(), sizes.rend())) << samples << "/" << m;
    }
  }
}

TEST(BatchDeathTest, MoreMicroBatchesThanSamplesIsOurBug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(micro_batch_sizes(2, 3), "3 micro-batches of 2");
  EXPECT_DEATH(micro_batch_sizes(2, 0), "0 micro-batches of 2");
}

}  // namespace
}  // namespace clustertwin::models::nestpipe
