// mark_lowest: the k lowest scores, ties in index order, as a stable sort.

#include "real/igsp/selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace clustertwin::real::igsp {
namespace {

template <typename T>
std::vector<bool> marked(const std::vector<T>& scores, int64_t k) {
  std::vector<SelectionKey<T>> scratch;
  std::unique_ptr<bool[]> out(new bool[scores.size()]);
  mark_lowest(scores.data(), static_cast<int64_t>(scores.size()), k, out.get(), scratch);
  return std::vector<bool>(out.get(), out.get() + scores.size());
}

// The rule it replaces: sort the indices stably by score, prune the first k.
template <typename T>
std::vector<bool> stable_sort_rule(const std::vector<T>& scores, int64_t k) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  std::vector<bool> out(scores.size(), false);
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(order.size()); ++i)
    out[order[static_cast<size_t>(i)]] = true;
  return out;
}

TEST(SelectionTest, TiesArePrunedInIndexOrder) {
  // Three 1s below the threshold value 2 and four 2s: k = 5 takes the 1s and the first two 2s (indices 1 and 3).
  const std::vector<float> scores = {3, 2, 1, 2, 1, 2, 1, 2};
  EXPECT_EQ(marked(scores, 5), (std::vector<bool>{false, true, true, true, true, false, true, false}));
}

TEST(SelectionTest, NoneAndAllAreExact) {
  const std::vector<float> scores = {0.5f, -0.0f, 0.0f, 7};
  EXPECT_EQ(marked(scores, 0), std::vector<bool>(4, false));
  EXPECT_EQ(marked(scores, 4), std::vector<bool>(4, true));
  // -0 and +0 are equal scores: the lower index goes first.
  EXPECT_EQ(marked(scores, 1), (std::vector<bool>{false, true, false, false}));
}

// Negative, zero (both signs) and positive scores, in float and double.
template <typename T>
void agrees_with_a_stable_sort() {
  std::mt19937 engine(7);
  std::uniform_int_distribution<int> value(-5, 4);  // 10 values over 1,000 entries: every threshold is a tie
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<T> scores(1000);
    for (T& s : scores) {
      const int v = value(engine);
      s = v == 0 && engine() % 2 ? -T(0) : static_cast<T>(v) * T(0.25);
    }
    for (int64_t k : {1, 99, 100, 101, 500, 600, 999})
      EXPECT_EQ(marked(scores, k), stable_sort_rule(scores, k)) << "trial " << trial << ", k " << k;
  }
}

TEST(SelectionTest, AgreesWithAStableSortOnManyTies) {
  agrees_with_a_stable_sort<float>();
  agrees_with_a_stable_sort<double>();
}

}  // namespace
}  // namespace clustertwin::real::igsp
