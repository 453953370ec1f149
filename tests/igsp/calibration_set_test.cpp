// IGSP's candidate pool, made once and shared: "igsp" and "igsp-unique" from a
// cache select exactly what they select on their own, the cache makes one pool
// per seed however many sets and threads ask for it, and a pool that cannot be
// made gives every asker the same error.

#include "real/igsp/calibration_set.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/igsp/tiny_training.h"

namespace clustertwin::real::igsp {
namespace {

models::nets::ByteLm pool_test_lm() {
  return testing::tiny_byte_lm(4);
}

CalibrationSetOptions pool_test_sets(uint64_t seed) {
  CalibrationSetOptions o;
  o.samples = 6;
  o.length = 20;
  o.seed = seed;
  o.igsp_pool_factor = 3;  // 18 candidates
  o.igsp_strata = 2;
  return o;
}

TEST(IgspPoolCacheTest, BothSignsSelectFromOnePoolAsTheyDoAlone) {
  models::nets::ByteLm m = pool_test_lm();
  IgspPoolCache cache;
  // Another seed's pool first: a cache that mixed pools up would hand it out below.
  ASSERT_TRUE(make_calibration_set("igsp", m, {}, pool_test_sets(8), &cache).is_ok());
  for (const char* name : {"igsp", "igsp-unique", "igsp-repeated"}) {
    auto shared = make_calibration_set(name, m, {}, pool_test_sets(7), &cache);
    auto alone = make_calibration_set(name, m, {}, pool_test_sets(7));
    ASSERT_TRUE(shared.is_ok()) << shared.status().message();
    ASSERT_TRUE(alone.is_ok()) << alone.status().message();
    EXPECT_EQ(shared->kind, "self-generated");
    EXPECT_EQ(shared->bytes.sizes(), (std::vector<int64_t>{6, 20}));
    EXPECT_TRUE(at::equal(shared->bytes, alone->bytes)) << name;
  }
  EXPECT_EQ(cache.size(), 2u);  // two seeds: two pools, whatever the sets that asked
  // Sets that are not IGSP's leave the cache alone.
  ASSERT_TRUE(make_calibration_set("selfcal", m, {}, pool_test_sets(7), &cache).is_ok());
  EXPECT_EQ(cache.size(), 2u);
}

TEST(IgspPoolCacheTest, ThreadsAskingTogetherGetTheOnePool) {
  models::nets::ByteLm m = pool_test_lm();
  IgspPoolCache cache;
  SelfGenOptions g;
  g.samples = 6;
  g.length = 20;
  g.seed = 3;
  std::shared_ptr<const IgspPool> a, b;
  std::thread first([&] { a = *cache.get(m, g, 3); });
  std::thread second([&] { b = *cache.get(m, g, 3); });
  first.join();
  second.join();
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(cache.size(), 1u);
  auto alone = igsp_pool(m, g, 3);
  ASSERT_TRUE(alone.is_ok());
  EXPECT_TRUE(at::equal(a->candidates, alone->candidates));
  EXPECT_EQ(a->perplexities, alone->perplexities);
  EXPECT_EQ(a->candidates.size(0), 18);  // pool factor 3 x 6 samples
}

TEST(IgspPoolCacheTest, APoolThatCannotBeMadeGivesEveryAskerItsError) {
  models::nets::ByteLm m = pool_test_lm();
  IgspPoolCache cache;
  SelfGenOptions g;
  g.samples = 6;
  g.length = 25;  // longer than the context of 24
  const std::string why = "sample length 25: must be in [2, context 24]";
  EXPECT_EQ(cache.get(m, g, 3).status().message(), why);
  EXPECT_EQ(cache.get(m, g, 3).status().message(), why);
  EXPECT_EQ(igsp_set(m, g, 3, 2, clustertwin::models::igsp::AggregationSign::kRepeated).status().message(), why);
  EXPECT_EQ(cache.get(m, g, 0).status().message(), "igsp: pool factor 0 must be >= 1");
}

}  // namespace
}  // namespace clustertwin::real::igsp
