// `run flexmarl --checkpoint-dir/--checkpoint-every/--resume` and `launch
// --max-restarts` (issue 49, items 1 and 2), on 5 ranks (a controller, three
// rollout workers and a trainer: the fewest the flexmarl variants run on):
//
// - every framework: the state a checkpoint restores is the state it saved,
//   byte for byte, on every rank (the controller's weights, gradients, host
//   copies of the trainer state and the schedule's placement; each worker's
//   loaded policies and resident trainers);
// - sync and marti, whose schedules do not depend on the order replies
//   arrive in: a run stopped at step 2 and resumed ends with the same
//   state, byte for byte, as one that ran its 4 steps without a stop;
// - the flexmarl variants train a micro-batch on whichever trainer is free
//   when its rows complete, so two uninterrupted runs already differ in the
//   last bits (the gradients add up in another order): a resumed run ends
//   within the 1e-6 that FlexMarlRunTest allows between frameworks;
// - a checkpoint of another world size, framework or config is one line and exit 2;
// - a rank killed mid-run costs a restart, not the run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "common/state_dump.h"
#include "tests/cli/run_command.h"
#include "tests/real/checkpoint_helpers.h"

namespace clustertwin::real::flexmarl {
namespace {

using testing::checkpoint_complete;
using testing::CommandResult;
using testing::expect_one_line_exit_2;
using testing::occurrences;
using testing::run_clustertwin;
using testing::ScopedEnv;
namespace fs = std::filesystem;

constexpr int kRanks = 5;

std::string fresh_dir(const std::string& name) {
  return testing::fresh_dir("ct_fmckpt_" + name);
}

// The small task, 16 samples per agent and step (a step is about a second on five ranks).
std::vector<std::string> run_args(const std::string& framework, int steps, const std::vector<std::string>& more) {
  std::vector<std::string> args = {"run",    "flexmarl",  "--framework", framework, "--steps", std::to_string(steps),
                                   "--seed", "3",         "--device",    "cpu",     "--json",  "--timeout",
                                   "60",     "--queries", "4",           "--group", "4"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

CommandResult launch(const std::vector<std::string>& launch_flags, const std::vector<std::string>& args) {
  return testing::launch_ranks(kRanks, launch_flags, args);
}

// Rank 0's JSON line, its "mean_reward": the last step's mean reward per agent, also after a resume.
std::string mean_reward(const std::string& out) {
  const size_t at = out.find("\"mean_reward\":[");
  return at == std::string::npos ? "" : out.substr(at, out.find(']', at) - at);
}

// The uninterrupted run of 4 steps.
std::string reference_run(const std::string& framework, std::string* reward = nullptr) {
  const std::string dir = fresh_dir(framework + "_reference");
  const CommandResult r = launch({}, run_args(framework, 4, {"--dump-state", dir}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (reward) *reward = mean_reward(r.out);
  return dir;
}

// 2 steps with a checkpoint after each, the state dumped at the end.
std::string first_half(const std::string& framework, const std::string& checkpoints) {
  const std::string dump = fresh_dir(framework + "_first_half");
  const CommandResult r = launch(
      {}, run_args(framework, 2, {"--checkpoint-dir", checkpoints, "--checkpoint-every", "1", "--dump-state", dump}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(checkpoint_complete(checkpoints, 1));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 2));
  return dump;
}

// max |a - b| / max |b| over the controller's published weights.
double worst_weight_difference(const std::string& dir, const std::string& reference) {
  auto a = read_state_dump(state_dump_path(dir, 0));
  auto b = read_state_dump(state_dump_path(reference, 0));
  EXPECT_TRUE(a.is_ok() && b.is_ok());
  if (!a.is_ok() || !b.is_ok()) return 1;
  double worst = 0;
  int compared = 0;
  for (const DumpTensor& t : a->tensors) {
    if (!t.name.ends_with(".weights")) continue;
    const auto other =
        std::find_if(b->tensors.begin(), b->tensors.end(), [&](const DumpTensor& u) { return u.name == t.name; });
    if (other == b->tensors.end()) return 1;
    const std::vector<double> x = t.values(), y = other->values();
    double diff = 0, scale = 0;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      diff = std::max(diff, std::abs(x[i] - y[i]));
      scale = std::max(scale, std::abs(y[i]));
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
    ++compared;
  }
  EXPECT_EQ(compared, 3) << "planner, solver and checker";
  return worst;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

class FlexMarlCheckpointTest : public ::testing::TestWithParam<std::string> {};

// Resumed at its last checkpoint with nothing left to train, a run dumps the
// state it had when it stopped: everything the checkpoint holds is put back.
TEST_P(FlexMarlCheckpointTest, ACheckpointRestoresTheStateItSaved) {
  const std::string framework = GetParam();
  const std::string checkpoints = fresh_dir(framework + "_round_trip");
  const std::string saved = first_half(framework, checkpoints);
  const std::string restored = fresh_dir(framework + "_restored");
  const CommandResult r =
      launch({}, run_args(framework, 2, {"--checkpoint-dir", checkpoints, "--resume", "--dump-state", restored}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resume: from " + checkpoints + "/step-000002 (step 2)"), std::string::npos) << r.err;
  testing::expect_identical_dumps(restored, saved, kRanks);
}

INSTANTIATE_TEST_SUITE_P(EveryFramework, FlexMarlCheckpointTest,
                         ::testing::Values("sync", "marti", "flexmarl", "flexmarl-nobalance", "flexmarl-noasync"),
                         test_name);

class FlexMarlExactResumeTest : public ::testing::TestWithParam<std::string> {};

// 4 steps at once, or 2 (checkpoints at 1 and 2) and then 2 more resumed: the
// same bytes on every rank, the same rewards. The resumed half checkpoints too.
TEST_P(FlexMarlExactResumeTest, StoppedAtStep2AndResumedEqualsTheUninterruptedRun) {
  const std::string framework = GetParam();
  std::string uninterrupted_reward;
  const std::string reference = reference_run(framework, &uninterrupted_reward);
  ASSERT_NE(uninterrupted_reward, "");
  const std::string checkpoints = fresh_dir(framework + "_checkpoints");
  first_half(framework, checkpoints);
  const std::string resumed = fresh_dir(framework + "_resumed");
  const CommandResult second = launch(
      {}, run_args(framework, 4,
                   {"--checkpoint-dir", checkpoints, "--checkpoint-every", "1", "--resume", "--dump-state", resumed}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  testing::expect_identical_dumps(resumed, reference, kRanks);
  EXPECT_EQ(mean_reward(second.out), uninterrupted_reward);
  // The last two complete checkpoints are kept: 3 and 4.
  EXPECT_FALSE(fs::exists(fs::path(checkpoints) / "step-000002"));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 3));
  EXPECT_TRUE(checkpoint_complete(checkpoints, 4));
}

INSTANTIATE_TEST_SUITE_P(OrderFreeSchedules, FlexMarlExactResumeTest, ::testing::Values("sync", "marti"), test_name);

// The flexmarl variants: the resumed run trains on, to where an uninterrupted
// one ends up to the last bits (two uninterrupted runs differ as much).
TEST(FlexMarlResumeTest, TheFlexmarlFrameworkResumesToTheSameWeights) {
  const std::string reference = reference_run("flexmarl");
  const std::string checkpoints = fresh_dir("flexmarl_checkpoints");
  const std::string halfway = first_half("flexmarl", checkpoints);
  const std::string resumed = fresh_dir("flexmarl_resumed");
  const CommandResult second =
      launch({}, run_args("flexmarl", 4, {"--checkpoint-dir", checkpoints, "--resume", "--dump-state", resumed}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_LE(worst_weight_difference(resumed, reference), 1e-6);
  // The comparison can fail: two steps of Adam at lr 1e-3 move the weights by far more.
  EXPECT_GT(worst_weight_difference(halfway, reference), 1e-4);
}

// A checkpoint of 5 ranks at steps 1 and 2 (sync), for the refusals.
std::string five_rank_checkpoints(const std::string& name) {
  const std::string dir = fresh_dir(name);
  const CommandResult r = launch({}, run_args("sync", 2, {"--checkpoint-dir", dir, "--checkpoint-every", "1"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

TEST(FlexMarlCheckpointRefusalTest, AnotherWorldSize) {
  const std::string dir = five_rank_checkpoints("world");
  const CommandResult r = testing::as_rank0_of(4, run_args("sync", 4, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, dir + "/step-000002/manifest.json: world_size 5, this run has 4");
}

TEST(FlexMarlCheckpointRefusalTest, AnotherFramework) {
  const std::string dir = five_rank_checkpoints("framework");
  const CommandResult r = testing::as_rank0_of(kRanks, run_args("marti", 4, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, dir + "/step-000002/manifest.json: framework sync, this run has marti");
}

TEST(FlexMarlCheckpointRefusalTest, AnotherConfig) {
  const std::string dir = five_rank_checkpoints("config");
  const CommandResult micro =
      testing::as_rank0_of(kRanks, run_args("sync", 4, {"--checkpoint-dir", dir, "--resume", "--micro-batch", "2"}));
  expect_one_line_exit_2(micro, dir + "/step-000002/manifest.json: config.micro_batch 4, this run has 2");
  const CommandResult lr =
      testing::as_rank0_of(kRanks, run_args("sync", 4, {"--checkpoint-dir", dir, "--resume", "--lr", "0.01"}));
  expect_one_line_exit_2(lr, dir + "/step-000002/manifest.json: config.lr 0.001, this run has 0.01");
}

TEST(FlexMarlCheckpointRefusalTest, FewerStepsThanTheCheckpoint) {
  const std::string dir = five_rank_checkpoints("steps");
  const CommandResult r = testing::as_rank0_of(kRanks, run_args("sync", 1, {"--checkpoint-dir", dir, "--resume"}));
  expect_one_line_exit_2(r, "--steps 1: fewer than the 2 steps " + dir + "/step-000002/rank-0.bin has trained");
}

TEST(FlexMarlCheckpointRefusalTest, FlagsThatDoNotGoTogether) {
  expect_one_line_exit_2(run_clustertwin(run_args("sync", 4, {"--checkpoint-every", "2"})),
                         "--checkpoint-every 2: needs checkpoint_dir");
  expect_one_line_exit_2(run_clustertwin(run_args("sync", 4, {"--resume"})), "--resume: needs checkpoint_dir");
}

// A worker (rank 2) dies (SIGKILL) at its first job of step 3, after the
// checkpoint of step 2: one restart from step 2, and the run ends where the
// uninterrupted one does.
TEST(FlexMarlRestartTest, ARankKilledMidRunCostsOneRestart) {
  const std::string reference = reference_run("sync");
  const std::string dir = fresh_dir("restart"), out = fresh_dir("restart_dump");
  const ScopedEnv kill("CT_TEST_KILL_RANK_AT_STEP", "2:3");
  const CommandResult r =
      launch({"--max-restarts", "1"},
             run_args("sync", 4, {"--checkpoint-dir", dir, "--checkpoint-every", "2", "--dump-state", out}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(occurrences(r.err, "clustertwin launch: restart "), 1u) << r.err;
  EXPECT_NE(r.err.find("clustertwin launch: restart 1 of 1: rank 2 was killed by signal 9"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("resume: from " + dir + "/step-000002 (step 2)"), std::string::npos) << r.err;
  testing::expect_identical_dumps(out, reference, kRanks);
}

}  // namespace
}  // namespace clustertwin::real::flexmarl
