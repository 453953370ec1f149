// `clustertwin sim sweep` and `sim sweep-merge` as a user runs them: a sweep
// run whole and the same sweep run as 3 shards merge to the same bytes; bad
// shard specs, missing and duplicate point files exit 2 with one line.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/file_io.h"
#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::expect_one_line_exit_2;
using testing::run_clustertwin;

const std::string kMixes = std::string(CT_SOURCE_DIR) + "/sim/examples/mixes/";

// Two small data-parallel jobs of 2 nodes each on the 3:1 example cluster:
// spread and random placements put their ring hops across the pods' uplinks.
std::string small_mix() {
  const std::string path = ::testing::TempDir() + "sweep_small_mix.yaml";
  std::ofstream(path) << "profile: " << kMixes << R"(two-pods-3to1.yaml
jobs:
  - {name: a, workers: 16, data_parallel: {compute: 2ms, allreduce_bytes: 64MiB}, steps: 3, warmup: 1, drain: 0}
  - {name: b, workers: 16, data_parallel: {compute: 3ms, allreduce_bytes: 32MiB}, steps: 3, warmup: 1, drain: 0}
)";
  return path;
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<std::string> sweep_args(const std::string& mix, const std::string& out, const std::string& seeds = "1-2",
                                    const std::string& placements = "packed,spread,random") {
  return {"sim", "sweep", mix, "--placements", placements, "--seeds", seeds, "--out", out};
}

std::string read_or_empty(const std::string& path) {
  auto text = read_file(path);
  return text.is_ok() ? *text : "";
}

TEST(SimSweepCliTest, ThreeShardsMergeToTheSameBytesAsOneRun) {
  const std::string mix = small_mix();
  const std::string whole = fresh_dir("sweep_whole");
  const std::string sharded = fresh_dir("sweep_sharded");
  auto args = sweep_args(mix, whole);
  args.insert(args.end(), {"--shard", "0/1"});
  const auto one = run_clustertwin(args);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("6 points (1 mixes x 3 placements x 2 seeds); shard 0/1 runs 6 of them"), std::string::npos)
      << one.out;
  for (int k = 0; k < 3; ++k) {
    args = sweep_args(mix, sharded);
    args.insert(args.end(), {"--shard", std::to_string(k) + "/3", "--parallel", "1"});
    const auto shard = run_clustertwin(args);
    ASSERT_EQ(shard.exit_code, 0) << shard.err;
    // 6 points over 3 shards: points k and k + 3.
    EXPECT_NE(shard.out.find("shard " + std::to_string(k) + "/3 runs 2 of them"), std::string::npos) << shard.out;
  }
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--json"}, std::vector<std::string>{"--csv", "-"}}) {
    std::vector<std::string> a = {"sim", "sweep-merge", whole};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto merged_whole = run_clustertwin(a);
    a[2] = sharded;
    const auto merged_shards = run_clustertwin(a);
    ASSERT_EQ(merged_whole.exit_code, 0) << merged_whole.err;
    ASSERT_EQ(merged_shards.exit_code, 0) << merged_shards.err;
    EXPECT_EQ(merged_whole.out, merged_shards.out);
    EXPECT_FALSE(merged_whole.out.empty());
  }
  // Each point's file is the same bytes too, whichever shard wrote it.
  for (int i = 0; i < 6; ++i) {
    const std::string name = "/point-00000" + std::to_string(i) + ".json";
    EXPECT_EQ(read_or_empty(whole + name), read_or_empty(sharded + name)) << name;
    EXPECT_FALSE(read_or_empty(whole + name).empty()) << name;
  }
  const auto table = run_clustertwin({"sim", "sweep-merge", whole});
  EXPECT_NE(table.out.find("# slowdown per mix, placement and job over the seeds"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("6 merged"), std::string::npos) << table.out;
}

TEST(SimSweepCliTest, MissingAndDuplicatePointsExit2) {
  const std::string mix = small_mix();
  const std::string dir = fresh_dir("sweep_gaps");
  const auto run = run_clustertwin(sweep_args(mix, dir, "1"));  // one seed: 3 points
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::filesystem::copy_file(dir + "/point-000001.json", dir + "/point-000001-again.json");
  expect_one_line_exit_2(run_clustertwin({"sim", "sweep-merge", dir}),
                         dir + "/point-000001.json: point 1 (" + mix + " spread seed 1) again: " + dir +
                             "/point-000001-again.json has it too (remove one)");
  std::filesystem::remove(dir + "/point-000001-again.json");
  std::filesystem::remove(dir + "/point-000002.json");
  expect_one_line_exit_2(run_clustertwin({"sim", "sweep-merge", dir}),
                         dir + ": 1 of 3 points missing: 2 (" + mix + " random seed 1)");
  const auto partial = run_clustertwin({"sim", "sweep-merge", dir, "--allow-missing"});
  EXPECT_EQ(partial.exit_code, 0) << partial.err;
  EXPECT_NE(partial.out.find("# missing points (--allow-missing): 2 (" + mix + " random seed 1)"), std::string::npos)
      << partial.out;
  // Rerun with --resume: only the missing point runs, and the merge is whole again.
  auto args = sweep_args(mix, dir, "1");
  args.push_back("--resume");
  const auto rerun = run_clustertwin(args);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_NE(rerun.out.find("# --resume: 2 of them done already, 1 to run"), std::string::npos) << rerun.out;
  EXPECT_NE(rerun.out.find("point 2: "), std::string::npos) << rerun.out;
  EXPECT_EQ(rerun.out.find("point 0: "), std::string::npos) << rerun.out;
  EXPECT_EQ(run_clustertwin({"sim", "sweep-merge", dir}).exit_code, 0);
}

TEST(SimSweepCliTest, BadShardSpecsExit2WithOneLine) {
  const std::string mix = small_mix();
  const std::string dir = fresh_dir("sweep_bad");
  auto with = [&](std::vector<std::string> extra, const std::string& seeds = "1-2",
                  const std::string& placements = "packed,spread,random") {
    auto args = sweep_args(mix, dir, seeds, placements);
    args.insert(args.end(), extra.begin(), extra.end());
    return run_clustertwin(args);
  };
  expect_one_line_exit_2(with({"--shard", "3/3"}), "--shard 3/3: K must be in [0, N-1] (shards count from 0)");
  expect_one_line_exit_2(with({"--shard", "two/3"}), "--shard two/3: expected K/N");
  expect_one_line_exit_2(with({}, "5-1"), "--seeds 5-1: range '5-1' runs backwards");
  expect_one_line_exit_2(with({}, "1-2", "packed,diagonal"), "'diagonal' is not a placement");
  // The environment is the test process's, which the command inherits.
  ::setenv("SLURM_ARRAY_TASK_ID", "4", 1);
  ::setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  expect_one_line_exit_2(with({"--shard-from-env"}),
                         "--shard-from-env: SLURM_ARRAY_TASK_ID='4' is not below SLURM_ARRAY_TASK_COUNT='4'");
  ::setenv("SLURM_ARRAY_TASK_COUNT", "four", 1);
  expect_one_line_exit_2(with({"--shard-from-env"}), "--shard-from-env: SLURM_ARRAY_TASK_COUNT='four'");
  ::unsetenv("SLURM_ARRAY_TASK_COUNT");
  expect_one_line_exit_2(with({"--shard-from-env"}), "--shard-from-env: SLURM_ARRAY_TASK_COUNT is not set");
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  const std::string file = ::testing::TempDir() + "sweep_not_a_folder";
  std::ofstream(file) << "x";
  auto bad_out = sweep_args(mix, file + "/sub");
  expect_one_line_exit_2(run_clustertwin(bad_out), "--out " + file + "/sub: cannot create the folder");
  EXPECT_FALSE(std::filesystem::exists(dir)) << "nothing runs for a bad spec";
}

}  // namespace
}  // namespace clustertwin
