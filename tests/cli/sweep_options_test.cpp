// `clustertwin sim sweep`'s flags (cli/sweep_options.h): a shard K/N, a
// Slurm array task's shard, seed and placement lists, and each bad value's
// one line naming the flag.

#include "cli/sweep_options.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace clustertwin::cli {
namespace {

TEST(SweepOptionsTest, ShardSpecs) {
  auto s = parse_shard("2/5");
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  const std::pair<const char*, const char*> bad[] = {
      {"5/5", "--shard 5/5: K must be in [0, N-1] (shards count from 0)"},
      {"0/0", "--shard 0/0: N must be in [1, 1000000]"},
      {"1", "--shard 1: expected K/N"},
      {"-1/3", "--shard -1/3: expected K/N"},
      {"a/3", "--shard a/3: expected K/N"},
      {"1/3x", "--shard 1/3x: expected K/N"},
  };
  for (const auto& [text, message] : bad) {
    auto r = parse_shard(text);
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(r.status().message().rfind(message, 0), 0u) << r.status().message();
  }
}

TEST(SweepOptionsTest, ShardFromSlurmEnvironment) {
  struct Case {
    const char* id;
    const char* count;
    std::string error;  // "" when it is a shard
  } cases[] = {
      {"3", "8", ""},
      {nullptr, "8", "--shard-from-env: SLURM_ARRAY_TASK_ID is not set"},
      {"3", nullptr, "--shard-from-env: SLURM_ARRAY_TASK_COUNT is not set"},
      {"x", "8", "--shard-from-env: SLURM_ARRAY_TASK_ID='x' is not a whole number"},
      {"3", "-8", "--shard-from-env: SLURM_ARRAY_TASK_COUNT='-8' is not a whole number"},
      {"3", "0", "--shard-from-env: SLURM_ARRAY_TASK_COUNT='0' must be >= 1"},
      {"8", "8", "--shard-from-env: SLURM_ARRAY_TASK_ID='8' is not below SLURM_ARRAY_TASK_COUNT='8'"},
  };
  for (const Case& c : cases) {
    auto shard = shard_from_env(
        [&](const char* name) -> const char* { return std::string(name) == "SLURM_ARRAY_TASK_ID" ? c.id : c.count; });
    if (c.error.empty()) {
      ASSERT_TRUE(shard.is_ok()) << shard.status().message();
      EXPECT_EQ(shard->index, 3);
      EXPECT_EQ(shard->count, 8);
    } else {
      ASSERT_FALSE(shard.is_ok());
      EXPECT_EQ(shard.status().message().rfind(c.error, 0), 0u) << shard.status().message();
    }
  }
}

TEST(SweepOptionsTest, SeedAndPlacementLists) {
  auto seeds = parse_seed_list("0,3,5-7");
  ASSERT_TRUE(seeds.is_ok()) << seeds.status().message();
  EXPECT_EQ(*seeds, (std::vector<uint64_t>{0, 3, 5, 6, 7}));
  EXPECT_EQ(parse_seed_list("8-1").status().message(), "--seeds 8-1: range '8-1' runs backwards");
  EXPECT_EQ(parse_seed_list("1,1").status().message(),
            "--seeds 1,1: '1' does not come after 1 (seeds ascending, each once)");
  EXPECT_FALSE(parse_seed_list("").is_ok());
  EXPECT_EQ(parse_placement_list("packed,diagonal").status().message(),
            "--placements packed,diagonal: 'diagonal' is not a placement (packed, spread or random)");
  EXPECT_EQ(parse_placement_list("spread,spread").status().message(),
            "--placements spread,spread: 'spread' is listed twice");
}

}  // namespace
}  // namespace clustertwin::cli
