// `run nestpipe --checkpoint-dir/--checkpoint-every/--resume` and `launch
// --max-restarts` (issue 49, items 1 and 2): a run stopped at step 6 and
// resumed ends with the same state, byte for byte, as one that ran its 12
// steps without a stop, for every variant; a bad checkpoint is one line and
// exit 2; a rank killed mid-run or mid-checkpoint costs a restart, not the run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/state_dump.h"
#include "tests/cli/run_command.h"
#include "tests/real/checkpoint_helpers.h"

namespace clustertwin::real::nestpipe {
namespace {

using testing::checkpoint_complete;
using testing::CommandResult;
using testing::expect_one_line_exit_2;
using testing::occurrences;
using testing::run_clustertwin;
using testing::ScopedEnv;
namespace fs = std::filesystem;

constexpr int kRanks = 2;

std::string fresh_dir(const std::string& name) {
  return testing::fresh_dir("ct_npckpt_" + name);
}

CommandResult launch(const std::vector<std::string>& launch_flags, const std::vector<std::string>& args) {
  return testing::launch_ranks(kRanks, launch_flags, args);
}

void expect_identical_dumps(const std::string& dir, const std::string& reference) {
  testing::expect_identical_dumps(dir, reference, kRanks);
}

CommandResult rank0_of_2(const std::vector<std::string>& args) {
  return testing::as_rank0_of(kRanks, args);
}

// Small sizes, both optimizers with state (Adagrad's accumulators, Adam's moments).
std::vector<std::string> run_args(const std::string& variant, int steps, const std::vector<std::string>& more) {
  std::vector<std::string> args = {
      "run",     "nestpipe",  "--variant",   variant,   "--steps",           std::to_string(steps),
      "--seed",  "3",         "--batch",     "16",      "--micro-batches",   "2",
      "--vocab", "4000",      "--optimizer", "adagrad", "--dense-optimizer", "adam",
      "--json",  "--timeout", "60"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Rank 0's JSON line: the report covers every step, also after a resume.
std::string json_line(const std::string& out) {
  const size_t at = out.find("[rank 0] {");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

// Drops "median_step_ms", a timing, and "patched_rows", the patches done:
// a window's first batch needs none (it is gathered after the last update).
std::string without_timing(std::string line) {
  for (const char* field : {"\"median_step_ms\":", "\"patched_rows\":"}) {
    const size_t at = line.find(field);
    if (at != std::string::npos) line.erase(at, line.find(',', at) + 1 - at);
  }
  return line;
}

// The uninterrupted run every other one is compared with.
std::string reference_run(const std::string& variant, std::string* json = nullptr) {
  const std::string dir = fresh_dir(variant + "_reference");
  const CommandResult r = launch({}, run_args(variant, 12, {"--dump-state", dir}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (json) *json = json_line(r.out);
  return dir;
}

class NestPipeResumeTest : public ::testing::TestWithParam<std::string> {};

// 12 steps at once, or 6 (checkpoints at 3 and 6) and then 6 more resumed:
// the same bytes. The resumed half checkpoints too (windows of 3).
TEST_P(NestPipeResumeTest, StoppedAtStep6AndResumedEqualsTheUninterruptedRun) {
  const std::string variant = GetParam();
  std::string uninterrupted_json;
  const std::string reference = reference_run(variant, &uninterrupted_json);
  const std::string checkpoints = fresh_dir(variant + "_checkpoints");
  const CommandResult first =
      launch({}, run_args(variant, 6, {"--checkpoint-dir", checkpoints, "--checkpoint-every", "3"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(checkpoint_complete(checkpoints, 3));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 6));
  const std::string resumed = fresh_dir(variant + "_resumed");
  const CommandResult second = launch(
      {}, run_args(variant, 12,
                   {"--checkpoint-dir", checkpoints, "--checkpoint-every", "3", "--resume", "--dump-state", resumed}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("resume: from " + checkpoints + "/step-000006 (step 6)"), std::string::npos) << second.err;
  expect_identical_dumps(resumed, reference);
  // Losses of every step and the oracle's counts travel in the checkpoint.
  EXPECT_EQ(without_timing(json_line(second.out)), without_timing(uninterrupted_json));
  // The last two complete checkpoints are kept: 9 and 12.
  EXPECT_FALSE(fs::exists(fs::path(checkpoints) / "step-000006"));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 9));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 12));
}

INSTANTIATE_TEST_SUITE_P(EveryVariant, NestPipeResumeTest,
                         ::testing::Values("torchrec", "semisync", "dbp", "fwp", "nestpipe"),
                         [](const auto& info) { return info.param; });

// A checkpoint of 2 ranks at steps 3 and 6 (torchrec), for the refusals.
std::string two_rank_checkpoints(const std::string& name) {
  const std::string dir = fresh_dir(name);
  const CommandResult r = launch({}, run_args("torchrec", 6, {"--checkpoint-dir", dir, "--checkpoint-every", "3"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

TEST(NestPipeCheckpointRefusalTest, AnotherWorldSize) {
  const std::string dir = two_rank_checkpoints("world");
  // No launcher: one rank, world size 1.
  const CommandResult r = run_clustertwin(run_args("torchrec", 12, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, dir + "/step-000006/manifest.json: world_size 2, this run has 1");
}

TEST(NestPipeCheckpointRefusalTest, AnotherVariant) {
  const std::string dir = two_rank_checkpoints("variant");
  const CommandResult r = rank0_of_2(run_args("dbp", 12, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, dir + "/step-000006/manifest.json: variant torchrec, this run has dbp");
}

TEST(NestPipeCheckpointRefusalTest, AnotherModelOrConfig) {
  const std::string dir = two_rank_checkpoints("config");
  const CommandResult lr = rank0_of_2(run_args("torchrec", 12, {"--checkpoint-dir", dir, "--resume", "--lr", "0.1"}));
  expect_one_line_exit_2(lr, dir + "/step-000006/manifest.json: config.lr 0.05, this run has 0.1");
  const CommandResult model =
      rank0_of_2(run_args("torchrec", 12, {"--checkpoint-dir", dir, "--resume", "--model", "hstu-small"}));
  expect_one_line_exit_2(model, dir + "/step-000006/manifest.json: config.model dlrm-small, this run has hstu-small");
}

TEST(NestPipeCheckpointRefusalTest, ABadChecksum) {
  const std::string dir = two_rank_checkpoints("crc");
  const std::string file = dir + "/step-000006/rank-1.bin";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  const CommandResult r = rank0_of_2(run_args("torchrec", 12, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, file + ": crc32 0x");
  EXPECT_NE(r.err.find("manifest.json says 0x"), std::string::npos) << r.err;
}

TEST(NestPipeCheckpointRefusalTest, AMissingRankFile) {
  const std::string dir = two_rank_checkpoints("missing_rank");
  fs::remove(dir + "/step-000006/rank-1.bin");
  const CommandResult r = rank0_of_2(run_args("torchrec", 12, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, dir + "/step-000006/rank-1.bin: missing or unreadable (listed in ");
}

TEST(NestPipeCheckpointRefusalTest, NoCompleteCheckpoint) {
  const std::string empty = fresh_dir("empty");
  fs::create_directories(empty + "/step-000003");  // a partial one: no manifest
  const CommandResult partial = rank0_of_2(run_args("torchrec", 12, {"--checkpoint-dir", empty, "--resume"}));
  expect_one_line_exit_2(partial, "--checkpoint-dir " + empty + ": no complete checkpoint (" + empty +
                                      "/step-000003 has no manifest.json)");
  const std::string missing = fresh_dir("missing");
  const CommandResult none = rank0_of_2(run_args("torchrec", 12, {"--checkpoint-dir", missing, "--resume"}));
  expect_one_line_exit_2(none, "--checkpoint-dir " + missing + ": no such folder to resume from");
}

TEST(NestPipeCheckpointRefusalTest, FewerStepsThanTheCheckpoint) {
  const std::string dir = two_rank_checkpoints("steps");
  const CommandResult r = rank0_of_2(run_args("torchrec", 4, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, "--steps 4: fewer than the 6 batches " + dir + "/step-000006/rank-0.bin has trained");
}

TEST(NestPipeCheckpointRefusalTest, FlagsThatDoNotGoTogether) {
  expect_one_line_exit_2(run_clustertwin(run_args("torchrec", 4, {"--checkpoint-every", "2"})),
                         "--checkpoint-every 2: needs checkpoint_dir");
  expect_one_line_exit_2(run_clustertwin(run_args("torchrec", 4, {"--resume"})), "--resume: needs checkpoint_dir");
  expect_one_line_exit_2(run_clustertwin(run_args("torchrec", 4, {"--checkpoint-dir", "x"})),
                         "--checkpoint-dir x: needs checkpoint_every >= 1");
  expect_one_line_exit_2(
      run_clustertwin(run_args("torchrec", 4, {"--checkpoint-dir", "x", "--checkpoint-every", "2", "--trace", "t"})),
      "--trace t: not with checkpoint_every or resume");
  expect_one_line_exit_2(run_clustertwin({"launch", "--nproc", "2", "--max-restarts", "2", "--", "run", "nestpipe"}),
                         "--max-restarts 2: the command has no --checkpoint-dir");
}

// The newest checkpoint lost its manifest (a kill before it): the resume
// says so, takes step 3, and still ends where the uninterrupted run does.
TEST(NestPipeCheckpointTest, AnIncompleteNewestCheckpointFallsBackToThePreviousOne) {
  const std::string reference = reference_run("dbp");
  const std::string dir = fresh_dir("fallback");
  ASSERT_EQ(launch({}, run_args("dbp", 6, {"--checkpoint-dir", dir, "--checkpoint-every", "3"})).exit_code, 0);
  fs::remove(dir + "/step-000006/manifest.json");
  const std::string resumed = fresh_dir("fallback_resumed");
  const CommandResult r =
      launch({}, run_args("dbp", 12, {"--checkpoint-dir", dir, "--resume", "--dump-state", resumed}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(dir + "/step-000006 is incomplete (no manifest.json); resuming from " + dir + "/step-000003"),
            std::string::npos)
      << r.err;
  expect_identical_dumps(resumed, reference);
}

// Rank 1 dies (SIGKILL) in batch 8, after the checkpoint of step 6: one
// restart from step 6, and the run ends where the uninterrupted one does.
TEST(NestPipeRestartTest, ARankKilledMidRunCostsOneRestart) {
  const std::string reference = reference_run("nestpipe");
  const std::string dir = fresh_dir("restart"), out = fresh_dir("restart_dump");
  const ScopedEnv kill("CT_TEST_KILL_RANK_AT_STEP", "1:8");
  const CommandResult r =
      launch({"--max-restarts", "2"},
             run_args("nestpipe", 12, {"--checkpoint-dir", dir, "--checkpoint-every", "3", "--dump-state", out}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(occurrences(r.err, "clustertwin launch: restart "), 1u) << r.err;
  EXPECT_NE(r.err.find("clustertwin launch: restart 1 of 2: rank 1 was killed by signal 9"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("resume: from " + dir + "/step-000006 (step 6)"), std::string::npos) << r.err;
  expect_identical_dumps(out, reference);
}

// Rank 1 dies writing the checkpoint of step 6 (its file not yet renamed):
// step 3 stays complete, step 6 never gets a manifest, and a resume from
// step 3 ends where the uninterrupted run does.
TEST(NestPipeRestartTest, AKillDuringACheckpointWriteLeavesThePreviousOneLoadable) {
  const std::string reference = reference_run("fwp");
  const std::string dir = fresh_dir("kill_in_write");
  {
    const ScopedEnv kill("CT_TEST_KILL_RANK_IN_CHECKPOINT", "1:6:before-rename");
    const CommandResult r = launch({}, run_args("fwp", 12, {"--checkpoint-dir", dir, "--checkpoint-every", "3"}));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("rank 1 was killed by signal 9"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(checkpoint_complete(dir, 3));
  EXPECT_FALSE(checkpoint_complete(dir, 6));
  EXPECT_FALSE(fs::exists(dir + "/step-000006/rank-1.bin"));
  const std::string out = fresh_dir("kill_in_write_dump");
  const CommandResult resumed =
      launch({}, run_args("fwp", 12, {"--checkpoint-dir", dir, "--resume", "--dump-state", out}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming from " + dir + "/step-000003"), std::string::npos) << resumed.err;
  expect_identical_dumps(out, reference);
}

// Rank 0 dies with every rank file of step 6 in place but no manifest; the
// launcher's restart resumes from step 3.
TEST(NestPipeRestartTest, AKillBeforeTheManifestIsRestartedFromThePreviousCheckpoint) {
  const std::string reference = reference_run("semisync");
  const std::string dir = fresh_dir("kill_before_manifest"), out = fresh_dir("kill_before_manifest_dump");
  const ScopedEnv kill("CT_TEST_KILL_RANK_IN_CHECKPOINT", "0:6:before-manifest");
  const CommandResult r =
      launch({"--max-restarts", "1"},
             run_args("semisync", 12, {"--checkpoint-dir", dir, "--checkpoint-every", "3", "--dump-state", out}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("clustertwin launch: restart 1 of 1: rank 0 was killed by signal 9"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("resuming from " + dir + "/step-000003"), std::string::npos) << r.err;
  expect_identical_dumps(out, reference);
}

// The last restart fails too: the launcher gives up, naming the last cause.
TEST(NestPipeRestartTest, GivesUpAfterMaxRestarts) {
  const std::string dir = fresh_dir("give_up");
  // Every attempt: an argument the ranks refuse after the launcher checked its own.
  const CommandResult r =
      launch({"--max-restarts", "1"},
             run_args("torchrec", 4, {"--checkpoint-dir", dir, "--checkpoint-every", "2", "--lr", "-1"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(occurrences(r.err, "clustertwin launch: restart "), 1u) << r.err;
  EXPECT_NE(r.err.find("clustertwin launch: giving up after 1 restarts; the last: rank "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clustertwin::real::nestpipe
