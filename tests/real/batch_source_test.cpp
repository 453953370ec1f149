// real/nestpipe/batch_source.h: where NestPipe's real executor gets its
// batches. Synthetic batches are a function of (seed, batch, rank) alone and
// step_keys agrees with each rank's own; Criteo lines are dealt to ranks in
// turn, and a file too short for the run is refused before any batch.

#include "real/nestpipe/batch_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "models/nestpipe/criteo.h"

namespace clustertwin::real::nestpipe {
namespace {

SyntheticSourceOptions synthetic(int rank) {
  SyntheticSourceOptions o;
  o.keys.vocabulary = 1000;
  o.keys.keys_per_sample = 4;
  o.keys.seed = 3;
  o.dense_features = 3;
  o.samples = 5;
  o.rank = rank;
  o.world = 2;
  return o;
}

HostBatch next_of(BatchSource& source, int64_t index) {
  auto b = source.next(index);
  EXPECT_TRUE(b.is_ok()) << b.status().message();
  return b.is_ok() ? *b : HostBatch{};
}

TEST(BatchSourceTest, ASyntheticBatchIsAFunctionOfSeedBatchAndRank) {
  auto a = synthetic_source(synthetic(0));
  auto again = synthetic_source(synthetic(0));
  auto other = synthetic_source(synthetic(1));
  ASSERT_TRUE(a.is_ok() && again.is_ok() && other.is_ok());
  const HostBatch b = next_of(**a, 0);
  ASSERT_EQ(b.keys.size(), 5u);
  for (const auto& sample : b.keys) {
    ASSERT_EQ(sample.size(), 4u);
    for (int64_t k : sample) {
      EXPECT_GE(k, 0);
      EXPECT_LT(k, 1000);
    }
  }
  ASSERT_EQ(b.dense.size(), 15u);  // 5 samples x 3 features
  for (float x : b.dense)
    EXPECT_GE(x, 0.f);  // log(1 + a count)
  ASSERT_EQ(b.labels.size(), 5u);
  for (float y : b.labels)
    EXPECT_TRUE(y == 0.f || y == 1.f);
  const HostBatch same = next_of(**again, 0);
  EXPECT_EQ(same.keys, b.keys);
  EXPECT_EQ(same.dense, b.dense);
  EXPECT_EQ(same.labels, b.labels);
  EXPECT_NE(next_of(**other, 0).keys, b.keys);
  EXPECT_NE(next_of(**a, 1).keys, b.keys);
}

TEST(BatchSourceTest, StepKeysAreEveryRanksOwnBatch) {
  auto a = synthetic_source(synthetic(0));
  auto r1 = synthetic_source(synthetic(1));
  ASSERT_TRUE(a.is_ok() && r1.is_ok());
  auto keys = (*a)->step_keys(0);
  ASSERT_TRUE(keys.is_ok()) << keys.status().message();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[1], next_of(**r1, 0).keys);
  EXPECT_EQ((*keys)[0], next_of(**a, 0).keys);
}

CriteoSourceOptions criteo(int rank, int64_t batches) {
  CriteoSourceOptions o;
  o.path = std::string(CT_TEST_DATA_DIR) + "/criteo/sample.tsv";
  o.vocabulary = 1 << 20;
  o.samples = 1;
  o.rank = rank;
  o.world = 2;
  o.batches = batches;
  return o;
}

TEST(BatchSourceTest, CriteoLinesAreDealtToRanksInTurn) {
  // sample.tsv's labels are 0, 1, 0, 1 (tests/data/criteo/README.md). With 2 ranks of 1 sample: rank 0 takes
  // lines 1 and 3, rank 1 lines 2 and 4.
  auto r0 = criteo_source(criteo(0, 2));
  auto r1 = criteo_source(criteo(1, 2));
  ASSERT_TRUE(r0.is_ok()) << r0.status().message();
  ASSERT_TRUE(r1.is_ok()) << r1.status().message();
  const HostBatch line2 = next_of(**r1, 0);
  EXPECT_EQ(line2.labels, std::vector<float>{1.f});
  // Line 2: I1 = 5, I2 = -1 (clamped to 0), I3 missing: log(1 + 5), 0, 0.
  ASSERT_EQ(line2.dense.size(), 13u);
  EXPECT_FLOAT_EQ(line2.dense[0], std::log(6.f));
  EXPECT_EQ(line2.dense[1], 0.f);
  EXPECT_EQ(line2.dense[2], 0.f);
  EXPECT_EQ(next_of(**r0, 0).labels, std::vector<float>{0.f});
  EXPECT_EQ(next_of(**r0, 1).labels, std::vector<float>{0.f});  // line 3
  EXPECT_EQ(next_of(**r1, 1).labels, std::vector<float>{1.f});  // line 4
  // Keys are criteo_keys of the line: step_keys of batch 0 gives line 1's and line 2's.
  auto fresh = criteo_source(criteo(0, 2));
  ASSERT_TRUE(fresh.is_ok());
  auto keys = (*fresh)->step_keys(0);
  ASSERT_TRUE(keys.is_ok()) << keys.status().message();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[1], line2.keys);
  ASSERT_EQ((*keys)[0].size(), 1u);
  EXPECT_EQ((*keys)[0][0].size(), 26u);  // one key per categorical column
}

TEST(BatchSourceTest, AShortCriteoFileIsRefusedUpFront) {
  // 3 batches x 2 ranks x 1 sample need 6 lines; the file has 4.
  auto short_file = criteo_source(criteo(0, 3));
  ASSERT_FALSE(short_file.is_ok());
  const std::string& m = short_file.status().message();
  EXPECT_TRUE(std::regex_search(m, std::regex("sample\\.tsv: 4 lines, the run needs 6 \\("))) << m;
  CriteoSourceOptions missing = criteo(0, 1);
  missing.path += ".absent";
  EXPECT_EQ(criteo_source(missing).status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace clustertwin::real::nestpipe
