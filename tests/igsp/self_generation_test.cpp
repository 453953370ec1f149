// Self-Cal and SGS calibration text: seeded and of the asked shape, greedy
// at temperature 0, and SGS keeps its lowest-perplexity candidates.

#include "real/igsp/self_generation.h"

#include <gtest/gtest.h>

#include "real/igsp/model_pruner.h"
#include "tests/igsp/tiny_training.h"

namespace clustertwin::real::igsp {
namespace {

models::nets::ByteLm tiny_lm() {
  return testing::tiny_byte_lm(2);
}

TEST(SelfGenerationTest, SelfCalIsSeededAndGreedyAtZero) {
  models::nets::ByteLm m = tiny_lm();
  SelfGenOptions o;
  o.samples = 4;
  o.length = 20;
  o.seed = 9;
  const at::Tensor a = *self_cal(m, o), b = *self_cal(m, o);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{4, 20}));
  EXPECT_TRUE(at::equal(a, b));
  o.seed = 10;
  EXPECT_FALSE(at::equal(a, *self_cal(m, o)));
  EXPECT_EQ(a[0][0].item<int64_t>(), '\n');
  o.t_start = o.t_end = 0;  // greedy: every sample the same
  const at::Tensor g = *self_cal(m, o);
  for (int64_t i = 1; i < 4; ++i)
    EXPECT_TRUE(at::equal(g[0], g[i]));
  o.length = 25;
  EXPECT_FALSE(self_cal(m, o).is_ok());  // longer than the context
}

TEST(SelfGenerationTest, SgsKeepsTheLowestPerplexityCandidates) {
  models::nets::ByteLm m = tiny_lm();
  const std::string text = "the quick brown fox jumps over the lazy dog and runs far away into the woods";
  SelfGenOptions o;
  o.samples = 3;
  o.length = 20;
  o.seed = 1;
  auto kept = sgs(m, {&text}, o, 8, 3);
  ASSERT_TRUE(kept.is_ok()) << kept.status().message();
  EXPECT_EQ(kept->sizes(), (std::vector<int64_t>{3, 20}));
  // Every kept sample starts with a prefix of the source.
  for (int64_t i = 0; i < 3; ++i) {
    std::string head;
    for (int64_t t = 0; t < 8; ++t)
      head.push_back(static_cast<char>((*kept)[i][t].item<int64_t>()));
    EXPECT_NE(text.find(head), std::string::npos) << head;
  }
  // Greedy continuations are a function of the prefix, and the first three prefixes drawn are the same
  // with one or three candidates per sample: the three kept of nine are at most as perplexing as those three.
  o.t_end = 0;
  const at::Tensor best = *sgs(m, {&text}, o, 8, 3);
  double filtered = 0, unfiltered = 0;
  for (int64_t i = 0; i < 3; ++i)
    filtered += byte_perplexity(m, best.slice(0, i, i + 1), 1);
  const at::Tensor all = *sgs(m, {&text}, o, 8, 1);
  for (int64_t i = 0; i < 3; ++i)
    unfiltered += byte_perplexity(m, all.slice(0, i, i + 1), 1);
  EXPECT_LE(filtered, unfiltered + 1e-9);
  EXPECT_EQ(sgs(m, {}, o).status().message(), "sgs: an empty calibration source list");
}

}  // namespace
}  // namespace clustertwin::real::igsp
