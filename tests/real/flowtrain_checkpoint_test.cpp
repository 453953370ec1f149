// `run flowtrain --checkpoint-dir/--checkpoint-every/--resume` and `launch
// --max-restarts` (issue 49, items 1 and 2): a run stopped at step 6 and
// resumed ends with the same state, byte for byte, as one that ran its 12
// steps without a stop, in every mode; a checkpoint of another world size,
// mode or model is one line and exit 2; a rank killed mid-run costs a
// restart, not the run.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/run_command.h"
#include "tests/real/checkpoint_helpers.h"

namespace clustertwin::real::flowtrain {
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
  return testing::fresh_dir("ct_ftckpt_" + name);
}

// The tiny VLM, 16 samples a step (a step is tens of ms on two ranks).
std::vector<std::string> run_args(const std::string& mode, int steps, const std::vector<std::string>& more) {
  std::vector<std::string> args = {"run",    "flowtrain", "--mode",   mode,  "--steps", std::to_string(steps),
                                   "--seed", "5",         "--device", "cpu", "--json",  "--timeout",
                                   "60"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

CommandResult launch(const std::vector<std::string>& launch_flags, const std::vector<std::string>& args) {
  return testing::launch_ranks(kRanks, launch_flags, args);
}

// Rank 0's JSON line, its "loss" array: every step's loss, also after a resume.
std::string losses(const std::string& out) {
  const size_t at = out.find("\"loss\":[");
  return at == std::string::npos ? "" : out.substr(at, out.find(']', at) - at);
}

// The uninterrupted run every other one is compared with.
std::string reference_run(const std::string& mode, std::string* loss = nullptr) {
  const std::string dir = fresh_dir(mode + "_reference");
  const CommandResult r = launch({}, run_args(mode, 12, {"--dump-state", dir}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (loss) *loss = losses(r.out);
  return dir;
}

class FlowTrainResumeTest : public ::testing::TestWithParam<std::string> {};

// 12 steps at once, or 6 (checkpoints at 3 and 6) and then 6 more resumed:
// the same bytes, the same losses. The resumed half checkpoints too.
TEST_P(FlowTrainResumeTest, StoppedAtStep6AndResumedEqualsTheUninterruptedRun) {
  const std::string mode = GetParam();
  std::string uninterrupted_loss;
  const std::string reference = reference_run(mode, &uninterrupted_loss);
  ASSERT_NE(uninterrupted_loss, "");
  const std::string checkpoints = fresh_dir(mode + "_checkpoints");
  const CommandResult first =
      launch({}, run_args(mode, 6, {"--checkpoint-dir", checkpoints, "--checkpoint-every", "3"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(checkpoint_complete(checkpoints, 3));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 6));
  const std::string resumed = fresh_dir(mode + "_resumed");
  const CommandResult second = launch(
      {}, run_args(mode, 12,
                   {"--checkpoint-dir", checkpoints, "--checkpoint-every", "3", "--resume", "--dump-state", resumed}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("resume: from " + checkpoints + "/step-000006 (step 6)"), std::string::npos) << second.err;
  testing::expect_identical_dumps(resumed, reference, kRanks);
  EXPECT_EQ(losses(second.out), uninterrupted_loss);
  // The last two complete checkpoints are kept: 9 and 12.
  EXPECT_FALSE(fs::exists(fs::path(checkpoints) / "step-000006"));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 9));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 12));
}

INSTANTIATE_TEST_SUITE_P(EveryMode, FlowTrainResumeTest, ::testing::Values("monolithic", "disagg-sync", "flowtrain"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// A checkpoint of 2 ranks at steps 3 and 6 (monolithic), for the refusals.
std::string two_rank_checkpoints(const std::string& name) {
  const std::string dir = fresh_dir(name);
  const CommandResult r = launch({}, run_args("monolithic", 6, {"--checkpoint-dir", dir, "--checkpoint-every", "3"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

TEST(FlowTrainCheckpointRefusalTest, AnotherWorldSize) {
  const std::string dir = two_rank_checkpoints("world");
  // No launcher: one rank, world size 1 (monolithic runs on one).
  const CommandResult r = run_clustertwin(run_args("monolithic", 12, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, dir + "/step-000006/manifest.json: world_size 2, this run has 1");
}

TEST(FlowTrainCheckpointRefusalTest, AnotherMode) {
  const std::string dir = two_rank_checkpoints("mode");
  const CommandResult r =
      testing::as_rank0_of(kRanks, run_args("flowtrain", 12, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, dir + "/step-000006/manifest.json: mode monolithic, this run has flowtrain");
}

TEST(FlowTrainCheckpointRefusalTest, AnotherModelOrConfig) {
  const std::string dir = two_rank_checkpoints("config");
  const CommandResult width =
      testing::as_rank0_of(kRanks, run_args("monolithic", 12, {"--checkpoint-dir", dir, "--resume", "--width", "2"}));
  expect_one_line_exit_2(width, dir + "/step-000006/manifest.json: config.width 1, this run has 2");
  const CommandResult batch = testing::as_rank0_of(
      kRanks, run_args("monolithic", 12, {"--checkpoint-dir", dir, "--resume", "--global-batch", "8"}));
  expect_one_line_exit_2(batch, dir + "/step-000006/manifest.json: config.global_batch 16, this run has 8");
}

TEST(FlowTrainCheckpointRefusalTest, AnotherSystemsCheckpoint) {
  const std::string dir = two_rank_checkpoints("system");
  const CommandResult r = testing::as_rank0_of(
      kRanks, {"run", "nestpipe", "--steps", "12", "--timeout", "60", "--checkpoint-dir", dir, "--resume"});
  expect_one_line_exit_2(r, dir +
                                "/step-000006/manifest.json: format clustertwin-flowtrain-checkpoint, this run has "
                                "clustertwin-nestpipe-checkpoint");
}

TEST(FlowTrainCheckpointRefusalTest, FewerStepsThanTheCheckpoint) {
  const std::string dir = two_rank_checkpoints("steps");
  const CommandResult r =
      testing::as_rank0_of(kRanks, run_args("monolithic", 4, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, "--steps 4: fewer than the 6 steps " + dir + "/step-000006/rank-0.bin has trained");
}

TEST(FlowTrainCheckpointRefusalTest, FlagsThatDoNotGoTogether) {
  expect_one_line_exit_2(run_clustertwin(run_args("monolithic", 4, {"--checkpoint-every", "2"})),
                         "--checkpoint-every 2: needs checkpoint_dir");
  expect_one_line_exit_2(run_clustertwin(run_args("monolithic", 4, {"--resume"})), "--resume: needs checkpoint_dir");
  expect_one_line_exit_2(run_clustertwin(run_args("monolithic", 4, {"--checkpoint-dir", "x"})),
                         "--checkpoint-dir x: needs checkpoint_every >= 1");
}

// The encoder worker (rank 0) dies (SIGKILL) at the start of step 8, after
// the checkpoint of step 6, its pools' shared memory still mapped by rank 1:
// one restart from step 6, and the run ends where the uninterrupted one does.
TEST(FlowTrainRestartTest, ARankKilledMidRunCostsOneRestart) {
  const std::string reference = reference_run("flowtrain");
  const std::string dir = fresh_dir("restart"), out = fresh_dir("restart_dump");
  const ScopedEnv kill("CT_TEST_KILL_RANK_AT_STEP", "0:8");
  const CommandResult r =
      launch({"--max-restarts", "1"},
             run_args("flowtrain", 12, {"--checkpoint-dir", dir, "--checkpoint-every", "3", "--dump-state", out}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(occurrences(r.err, "clustertwin launch: restart "), 1u) << r.err;
  EXPECT_NE(r.err.find("clustertwin launch: restart 1 of 1: rank 0 was killed by signal 9"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("resume: from " + dir + "/step-000006 (step 6)"), std::string::npos) << r.err;
  testing::expect_identical_dumps(out, reference, kRanks);
}

}  // namespace
}  // namespace clustertwin::real::flowtrain
