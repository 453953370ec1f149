// real/core/checkpoint.h: checkpoint folders written, chosen and checked the
// same way for every executor (no torch, no ranks: the files alone).

#include "real/core/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace clustertwin::real {
namespace {

namespace fs = std::filesystem;

CheckpointIdentity identity(int world, const std::string& mode) {
  return {"flowtrain", world, "mode", mode, {{"model", "tiny"}, {"lr", "0.05"}}};
}

std::string fresh(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "ct_checkpoint_" + name;
  fs::remove_all(dir);
  return dir;
}

// Two ranks' files "r0 at STEP" and "r1 at STEP", then the manifest.
void write_checkpoint(const std::string& dir, int64_t step, const CheckpointIdentity& id) {
  std::vector<CheckpointRankFile> files;
  for (int r = 0; r < 2; ++r) {
    const std::string bytes = "r" + std::to_string(r) + " at " + std::to_string(step);
    ASSERT_TRUE(write_checkpoint_rank_file(dir, step, r, bytes, {}).is_ok());
    files.push_back({static_cast<int64_t>(bytes.size()), checkpoint_crc32(bytes)});
  }
  ASSERT_TRUE(write_checkpoint_manifest(dir, step, id, files, {}).is_ok());
}

TEST(CheckpointTest, ResumesFromTheNewestAndKeepsTheLastTwo) {
  const std::string dir = fresh("newest");
  for (int64_t step : {3, 6, 9})
    write_checkpoint(dir, step, identity(2, "flowtrain"));
  EXPECT_FALSE(fs::exists(checkpoint_step_dir(dir, 3)));
  auto point = find_resume_point(dir, identity(2, "flowtrain"), 1);
  ASSERT_TRUE(point.is_ok()) << point.status().message();
  EXPECT_EQ(point->step, 9);
  EXPECT_EQ(point->rank_bytes, "r1 at 9");
  EXPECT_EQ(point->fallback_note, "");
}

TEST(CheckpointTest, AnIncompleteNewestFallsBackAndSaysSo) {
  const std::string dir = fresh("fallback");
  write_checkpoint(dir, 3, identity(2, "flowtrain"));
  ASSERT_TRUE(write_checkpoint_rank_file(dir, 6, 0, "r0 at 6", {}).is_ok());  // no manifest
  auto point = find_resume_point(dir, identity(2, "flowtrain"), 0);
  ASSERT_TRUE(point.is_ok()) << point.status().message();
  EXPECT_EQ(point->step, 3);
  EXPECT_EQ(point->fallback_note, checkpoint_step_dir(dir, 6) + " is incomplete (no manifest.json); resuming from " +
                                      checkpoint_step_dir(dir, 3));
}

TEST(CheckpointTest, RefusesAnotherRunNamingTheFieldAndBothValues) {
  const std::string dir = fresh("refusals");
  write_checkpoint(dir, 6, identity(2, "flowtrain"));
  const std::string manifest = checkpoint_step_dir(dir, 6) + "/manifest.json";
  EXPECT_EQ(find_resume_point(dir, identity(4, "flowtrain"), 0).status().message(),
            manifest + ": world_size 2, this run has 4");
  EXPECT_EQ(find_resume_point(dir, identity(2, "monolithic"), 0).status().message(),
            manifest + ": mode flowtrain, this run has monolithic");
  CheckpointIdentity wider = identity(2, "flowtrain");
  wider.config[1].second = "0.1";
  EXPECT_EQ(find_resume_point(dir, wider, 0).status().message(), manifest + ": config.lr 0.05, this run has 0.1");
  CheckpointIdentity other = identity(2, "flowtrain");
  other.system = "nestpipe";
  EXPECT_EQ(find_resume_point(dir, other, 0).status().message(),
            manifest + ": format clustertwin-flowtrain-checkpoint, this run has clustertwin-nestpipe-checkpoint");
}

TEST(CheckpointTest, RefusesARankFileThatIsNotTheOneWritten) {
  const std::string dir = fresh("crc");
  write_checkpoint(dir, 6, identity(2, "flowtrain"));
  const std::string file = checkpoint_step_dir(dir, 6) + "/rank-1.bin";
  {
    std::FILE* f = std::fopen(file.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fputc('R', f);  // "r1 at 6" -> "R1 at 6": the same size, another CRC
    std::fclose(f);
  }
  const Status s = find_resume_point(dir, identity(2, "flowtrain"), 0).status();
  EXPECT_EQ(s.message().rfind(file + ": crc32 0x", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("manifest.json says 0x"), std::string::npos) << s.message();
}

TEST(CheckpointTest, NoCompleteCheckpointIsNotFound) {
  const std::string dir = fresh("none");
  fs::create_directories(checkpoint_step_dir(dir, 3));
  const Status s = find_resume_point(dir, identity(2, "flowtrain"), 0).status();
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_EQ(s.message(), "checkpoint_dir " + dir + ": no complete checkpoint (" + checkpoint_step_dir(dir, 3) +
                             " has no manifest.json)");
}

}  // namespace
}  // namespace clustertwin::real
