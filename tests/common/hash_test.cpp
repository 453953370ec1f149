// common/hash.h: SplitMix64, whose published outputs pin both functions.

#include "common/hash.h"

#include <gtest/gtest.h>

#include <set>

namespace clustertwin {
namespace {

TEST(HashTest, Splitmix64MatchesTheReferenceSequence) {
  // The reference generator (Vigna's splitmix64.c) seeded with 0 advances its
  // state by the golden-ratio constant and returns mix64 of the new state;
  // its first outputs are e220a8397b1dcdaf, 6e789e6aa1b965f4, 06c45d188009454f.
  const uint64_t gamma = 0x9e3779b97f4a7c15ULL;
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(gamma), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(splitmix64(2 * gamma), 0x06c45d188009454fULL);
}

TEST(HashTest, Mix64IsTheFinaliserAndMapsZeroToZero) {
  EXPECT_EQ(mix64(0), 0u);
  const uint64_t gamma = 0x9e3779b97f4a7c15ULL;
  for (uint64_t x : {0ULL, 1ULL, 42ULL, ~0ULL})
    EXPECT_EQ(splitmix64(x), mix64(x + gamma)) << x;
}

TEST(HashTest, Mix64SpreadsNeighbouringInputs) {
  // A bijection: 1,000 consecutive inputs give 1,000 outputs, and one flipped
  // input bit flips about half of the output's 64 bits.
  std::set<uint64_t> seen;
  for (uint64_t x = 0; x < 1000; ++x)
    seen.insert(mix64(x));
  EXPECT_EQ(seen.size(), 1000u);
  const int flipped = __builtin_popcountll(mix64(12345) ^ mix64(12345 ^ 1));
  EXPECT_GT(flipped, 16);
  EXPECT_LT(flipped, 48);
}

}  // namespace
}  // namespace clustertwin
