// The calibration-set information metrics on hand-counted examples.

#include "models/igsp/information.h"

#include <gtest/gtest.h>

namespace clustertwin::models::igsp {
namespace {

TEST(InformationTest, HandCountedExample) {
  // "abcab": 4-grams abca, bcab (2, both distinct); "aaaaaa": aaaa x3 (1 distinct). 3 distinct of 5.
  auto m = information_metrics({"abcab", "aaaaaa"});
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_DOUBLE_EQ(m->unique_4gram_fraction, 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(m->repeated_4gram_fraction, 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(m->byte_coverage, 3.0 / 256.0);
  EXPECT_EQ(m->volume, 11);
  EXPECT_DOUBLE_EQ(m->mean_length, 5.5);
  EXPECT_EQ(m->samples, 2);
}

TEST(InformationTest, FourGramsDoNotCrossSamplesAndWordsAreCounted) {
  // Apart: "abca" and "bcab", two distinct 4-grams of two. Joined, "abcabcab" would give abca, bcab, cabc,
  // abca, bcab: three distinct of five.
  auto m = information_metrics({"abca", "bcab"});
  ASSERT_TRUE(m.is_ok());
  EXPECT_DOUBLE_EQ(m->unique_4gram_fraction, 1.0);
  auto w = information_metrics({"the cat and the dog", "the end"});
  ASSERT_TRUE(w.is_ok());
  // 7 words, 5 types (the, cat, and, dog, end).
  EXPECT_DOUBLE_EQ(w->word_types_per_1000, 1000.0 * 5 / 7);
}

TEST(InformationTest, EmptySetsAreRejected) {
  EXPECT_EQ(information_metrics({}).status().message(), "information metrics: an empty calibration set");
  EXPECT_EQ(information_metrics({"abc"}).status().message(), "information metrics: no sample has 4 bytes");
}

// Each sign gets what it asks for: minimising repeated 4-grams picks the set with the most distinct ones,
// minimising the unique fraction the one with the fewest; either beats the other on its own measure.
TEST(InformationTest, SelectionMinimisesTheAggregationItIsGiven) {
  std::vector<std::string> candidates;
  for (int i = 0; i < 12; ++i) {
    std::string s;
    for (int t = 0; t < 40; ++t)  // period 1 + i % 6: repetitive for small periods, varied for large
      s.push_back(static_cast<char>('a' + (t % (1 + i % 6)) + 7 * (i / 6)));
    candidates.push_back(s);
  }
  const std::vector<double> flat(candidates.size(), 1.0);
  auto pick = [&](AggregationSign sign) {
    auto chosen = select_min_aggregation(candidates, flat, 4, 1, sign);
    EXPECT_TRUE(chosen.is_ok()) << chosen.status().message();
    std::vector<std::string> set;
    for (size_t c : *chosen)
      set.push_back(candidates[c]);
    return information_metrics(set)->unique_4gram_fraction;
  };
  const double diverse = pick(AggregationSign::kRepeated), repetitive = pick(AggregationSign::kUnique);
  EXPECT_GT(diverse, repetitive);
  // No 4-subset does better on either measure than the greedy choice does here (checked exhaustively).
  double best = 0, worst = 1;
  for (size_t a = 0; a < 12; ++a)
    for (size_t b = a + 1; b < 12; ++b)
      for (size_t c = b + 1; c < 12; ++c)
        for (size_t d = c + 1; d < 12; ++d) {
          const double u =
              information_metrics({candidates[a], candidates[b], candidates[c], candidates[d]})->unique_4gram_fraction;
          best = std::max(best, u);
          worst = std::min(worst, u);
        }
  EXPECT_DOUBLE_EQ(diverse, best);
  EXPECT_DOUBLE_EQ(repetitive, worst);
}

// Strata balance perplexity: four quantile bins of sixteen candidates give two each to a set of eight, whatever
// the aggregation prefers.
TEST(InformationTest, SelectionTakesEqualSharesOfEachPerplexityStratum) {
  std::vector<std::string> candidates;
  std::vector<double> perplexity;
  for (int i = 0; i < 16; ++i) {
    candidates.push_back(i < 4 ? std::string(30, 'x') : "sample " + std::to_string(i * 7919) + " of text");
    perplexity.push_back(100.0 - i);  // the repetitive ones are the high-perplexity bin
  }
  for (AggregationSign sign : {AggregationSign::kRepeated, AggregationSign::kUnique}) {
    auto chosen = select_min_aggregation(candidates, perplexity, 8, 4, sign);
    ASSERT_TRUE(chosen.is_ok());
    std::vector<int> per_bin(4, 0);
    for (size_t c : *chosen)
      ++per_bin[3 - c / 4];  // perplexity falls with the index
    EXPECT_EQ(per_bin, (std::vector<int>{2, 2, 2, 2})) << aggregation_sign_name(sign);
    EXPECT_EQ(*chosen, *select_min_aggregation(candidates, perplexity, 8, 4, sign));  // deterministic
  }
}

TEST(InformationTest, SelectionRejectsBadSizes) {
  const std::vector<std::string> c = {"abcd", "bcde", "cdef"};
  EXPECT_EQ(select_min_aggregation(c, {1, 2}, 1, 1, AggregationSign::kRepeated).status().message(),
            "igsp selection: 3 candidates but 2 perplexities");
  EXPECT_EQ(select_min_aggregation(c, {1, 2, 3}, 4, 1, AggregationSign::kRepeated).status().message(),
            "igsp selection: cannot choose 4 of 3 candidates");
  EXPECT_EQ(select_min_aggregation(c, {1, 2, 3}, 2, 3, AggregationSign::kUnique).status().message(),
            "igsp selection: 3 strata for 2 samples");
}

}  // namespace
}  // namespace clustertwin::models::igsp
