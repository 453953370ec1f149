// The calibration-set information metrics on hand-counted examples.

#include "models/igsp/information.h"

#include <gtest/gtest.h>

namespace clustertwin::igsp {
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

}  // namespace
}  // namespace clustertwin::igsp
