// A sweep's order, its shards (every point in exactly one), and merging
// point files: one sweep, each point once, none
// missing, whatever shard wrote which file.

#include "sim/mix/sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/file_io.h"
#include "sim/mix/sweep_merge.h"

namespace clustertwin::sim::mix {
namespace {

SweepSpec two_by_three_by_five() {
  return SweepSpec{{"a.yaml", "b.yaml"}, {"packed", "spread", "random"}, {1, 2, 3, 4, 5}};
}

TEST(SweepTest, PointsAreMixMajorThenPlacementThenSeed) {
  const std::vector<SweepPoint> points = sweep_points(two_by_three_by_five());
  ASSERT_EQ(points.size(), 30u);  // 2 mixes x 3 placements x 5 seeds
  for (size_t i = 0; i < points.size(); ++i)
    EXPECT_EQ(points[i].index, i);
  // index = (m x 3 + p) x 5 + s: 17 = (1 x 3 + 0) x 5 + 2 -> b.yaml, packed, the third seed (3).
  EXPECT_EQ(points[17].mix, 1u);
  EXPECT_EQ(points[17].placement, "packed");
  EXPECT_EQ(points[17].seed, 3u);
  // 9 = (0 x 3 + 1) x 5 + 4 -> a.yaml, spread, seed 5.
  EXPECT_EQ(points[9].mix, 0u);
  EXPECT_EQ(points[9].placement, "spread");
  EXPECT_EQ(points[9].seed, 5u);
}

TEST(SweepTest, ShardsCoverEveryPointExactlyOnce) {
  const SweepSpec spec = two_by_three_by_five();
  for (int n : {1, 2, 3, 7, 30, 31, 64}) {
    std::map<size_t, int> seen;
    for (int k = 0; k < n; ++k) {
      for (const SweepPoint& p : shard_points(spec, {k, n})) {
        EXPECT_EQ(p.index % static_cast<size_t>(n), static_cast<size_t>(k));
        ++seen[p.index];
      }
    }
    ASSERT_EQ(seen.size(), spec.points()) << n << " shards";
    for (const auto& [index, count] : seen)
      EXPECT_EQ(count, 1) << "point " << index << " of " << n << " shards";
  }
}

// A point file as a shard writes it, for a made-up result: one job whose
// slowdown is 1 + index / 8 (exact in binary, so means are exact too).
class SweepMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "sweep_merge_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    spec_ = SweepSpec{{"m.yaml"}, {"packed", "spread"}, {1, 2}};
  }

  std::string write_point(size_t index, const std::string& id = "00000000000000aa", const std::string& name = "") {
    const SweepPoint p = sweep_points(spec_)[index];
    MixResult result;
    result.file = "m.yaml";
    result.placement = p.placement;
    result.seed = p.seed;
    JobResult job;
    job.name = "j";
    job.alone.step_time_s = 0.25;
    job.slowdown = 1 + static_cast<double>(index) / 8;
    job.mixed.step_time_s = job.alone.step_time_s * job.slowdown;
    result.jobs.push_back(job);
    const std::string path = dir_ + "/" + (name.empty() ? point_file_name(index) : name);
    EXPECT_TRUE(write_file_atomically(path, point_json(id, spec_, p, result)).is_ok());
    return path;
  }

  std::string dir_;
  SweepSpec spec_;
};

TEST_F(SweepMergeTest, AllPointsMergeIntoRowsAndASummary) {
  for (size_t i = 0; i < 4; ++i)
    write_point(i);
  auto merged = merge_sweep(dir_, false);
  ASSERT_TRUE(merged.is_ok()) << merged.status().message();
  ASSERT_EQ(merged->points.size(), 4u);
  const std::string json = merged_json(*merged);
  // packed: points 0 and 1 (slowdowns 1, 1.125): mean 1.0625; spread: points 2, 3 (1.25, 1.375): mean 1.3125.
  // A slowdown is a double, so a whole one prints as 1.0 (nlohmann's format).
  EXPECT_NE(json.find("{\"mix\":\"m.yaml\",\"placement\":\"packed\",\"job\":\"j\",\"seeds\":2,\"mean_slowdown\":1.0625,"
                      "\"min_slowdown\":1.0,\"max_slowdown\":1.125}"),
            std::string::npos)
      << json;
  EXPECT_NE(merged_table(*merged).find("m.yaml  spread     j        2   1.3125x   1.2500x   1.3750x\n"),
            std::string::npos)
      << merged_table(*merged);
  // Point 1: alone 250 ms, slowdown 1.125 -> 281.25 ms in the mix.
  EXPECT_EQ(merged_csv(*merged).rfind("point,mix,placement,seed,job,alone_step_s,mix_step_s,slowdown\n"
                                      "0,m.yaml,packed,1,j,0.25,0.25,1\n1,m.yaml,packed,2,j,0.25,0.28125,1.125\n",
                                      0),
            0u)
      << merged_csv(*merged);
}

TEST_F(SweepMergeTest, MissingPointsAreListed) {
  write_point(0);
  write_point(3);
  auto merged = merge_sweep(dir_, false);
  ASSERT_FALSE(merged.is_ok());
  EXPECT_EQ(merged.status().message(), dir_ +
                                           ": 2 of 4 points missing: 1 (m.yaml packed seed 2), 2 (m.yaml spread seed "
                                           "1) (rerun their shards, or pass --allow-missing)");
  auto partial = merge_sweep(dir_, true);
  ASSERT_TRUE(partial.is_ok()) << partial.status().message();
  EXPECT_EQ(partial->points.size(), 2u);
  EXPECT_NE(merged_table(*partial).find("# missing points (--allow-missing): 1 (m.yaml packed seed 2), 2 (m.yaml "
                                        "spread seed 1)\n"),
            std::string::npos);
}

TEST_F(SweepMergeTest, APointTwiceNamesBothFiles) {
  for (size_t i = 0; i < 4; ++i)
    write_point(i);
  const std::string copy = write_point(2, "00000000000000aa", "point-000002-copy.json");
  auto merged = merge_sweep(dir_, false);
  ASSERT_FALSE(merged.is_ok());
  // Files are read in name order: point-000002.json before point-000002-copy.json? '-' < '.', so the copy first.
  EXPECT_EQ(merged.status().message(),
            dir_ + "/point-000002.json: point 2 (m.yaml spread seed 1) again: " + copy + " has it too (remove one)");
}

TEST_F(SweepMergeTest, AnotherSweepsPointIsRefused) {
  for (size_t i = 0; i < 3; ++i)
    write_point(i);
  write_point(3, "00000000000000bb");
  auto merged = merge_sweep(dir_, false);
  ASSERT_FALSE(merged.is_ok());
  EXPECT_EQ(merged.status().message(), dir_ + "/point-000003.json: sweep '00000000000000bb', but " + dir_ +
                                           "/point-000000.json is sweep '00000000000000aa' (points of two sweeps, or "
                                           "of changed inputs, in one folder)");
}

TEST_F(SweepMergeTest, UnreadableFilesAndEmptyFoldersAreNamed) {
  EXPECT_EQ(merge_sweep(dir_, false).status().message(),
            dir_ + ": no point-*.json file (run clustertwin sim sweep first)");
  write_point(0);
  std::ofstream(dir_ + "/point-000001.json") << "{\"format\":\"clustertwin-sweep-point/1\",";
  auto merged = merge_sweep(dir_, false);
  ASSERT_FALSE(merged.is_ok());
  // The file cut short after its first member: nlohmann's position and reason, on one line.
  EXPECT_EQ(merged.status().message().rfind(dir_ + "/point-000001.json: not valid JSON at line 1, column ", 0), 0u)
      << merged.status().message();
  EXPECT_EQ(merged.status().message().find('\n'), std::string::npos) << merged.status().message();
  std::ofstream(dir_ + "/point-000001.json") << "{\"hello\": 1}";
  EXPECT_EQ(merge_sweep(dir_, false).status().message(),
            dir_ + "/point-000001.json: not a sweep point file (no \"format\":\"clustertwin-sweep-point/1\")");
  EXPECT_EQ(merge_sweep(dir_ + "/nope", false).status().message(), dir_ + "/nope: not a folder of sweep point files");
}

}  // namespace
}  // namespace clustertwin::sim::mix
