#include "traces/intervals.h"

#include <gtest/gtest.h>

namespace clustertwin::traces {
namespace {

TEST(IntervalsTest, MergeLengthOverlapAndClip) {
  Intervals a = {{5, 7}, {0, 2}, {1, 3}, {4, 4}};  // [4, 4) is empty and dropped
  merge_intervals(&a);
  ASSERT_EQ(a, (Intervals{{0, 3}, {5, 7}}));
  EXPECT_DOUBLE_EQ(intervals_length(a), 5);  // 3 + 2
  const Intervals b = {{2, 6}};
  EXPECT_DOUBLE_EQ(overlap_length(a, b), 2);  // [2, 3) and [5, 6)
  EXPECT_EQ(clip_and_merge({{0, 10}, {12, 20}}, 5, 15), (Intervals{{5, 10}, {12, 15}}));
}

}  // namespace
}  // namespace clustertwin::traces
