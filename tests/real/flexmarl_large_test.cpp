// `clustertwin run flexmarl --task large` as a user starts it: 5 processes
// (a controller, three rollout workers and a trainer) run one FlexMARL step
// of the policies sized for a GPU, on the CPU, and the report names the task
// and each policy's parameters. Slow: the planner's 38M float64 parameters
// decode up to 512 tokens and train on ~520-token sequences.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace clustertwin::real::flexmarl {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;

// A byte-level GPT's parameters from its shape, written out here apart from
// models/flexmarl/math_task.cpp: per block two LayerNorms (2d each), Q, K,
// V and the output projection (d x d + d each), the MLP's two Linears
// (d x f + f, f x d + d); then the final LayerNorm (2d), the head
// (d x 16 + 16) and the token and position tables ((16 + context) x d).
int64_t gpt_params(int64_t d, int64_t layers, int64_t f, int64_t context) {
  const int64_t vocab = 16;
  const int64_t block = 2 * (2 * d) + 4 * (d * d + d) + (d * f + f) + (f * d + d);
  return layers * block + 2 * d + (d * vocab + vocab) + (vocab + context) * d;
}

TEST(FlexMarlLargeTest, OneStepRunsAndReportsTheLargePolicies) {
  const CommandResult r =
      run_clustertwin({"launch",        "--nproc", "5",       "--", "run",       "flexmarl", "--framework", "flexmarl",
                       "--task",        "large",   "--steps", "1",  "--queries", "2",        "--group",     "4",
                       "--micro-batch", "4",       "--seed",  "3",  "--timeout", "900",      "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t brace = r.out.find('{');
  ASSERT_NE(brace, std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(brace));
  std::printf("flexmarl --task large, 5 ranks, one step: %.1f s\n", j["step_s"].get<double>());
  EXPECT_EQ(j["task"], "large");
  EXPECT_EQ(j["framework"], "flexmarl");
  EXPECT_EQ(j["steps"], 1);
  // The context: the solver's problem (6), the planner's whole scratchpad
  // (512), ";" and its 8 tokens: 527, rounded up to 528.
  const int64_t context = 528;
  // planner 512 x 12 layers: a block 2,048 + 1,050,624 + 1,050,624 + 1,049,088 = 3,152,384; x 12, + 1,024
  // + 8,208 + 544 x 512 = 38,116,368.
  EXPECT_EQ(j["params"]["planner"].get<int64_t>(), gpt_params(512, 12, 2048, context));
  EXPECT_EQ(j["params"]["planner"].get<int64_t>(), 38116368);
  // solver 384 x 8: a block 1,774,464; x 8, + 768 + 6,160 + 544 x 384 = 14,411,536.
  EXPECT_EQ(j["params"]["solver"].get<int64_t>(), gpt_params(384, 8, 1536, context));
  EXPECT_EQ(j["params"]["solver"].get<int64_t>(), 14411536);
  // checker 256 x 4: a block 789,760; x 4, + 512 + 4,112 + 544 x 256 = 3,302,928.
  EXPECT_EQ(j["params"]["checker"].get<int64_t>(), gpt_params(256, 4, 1024, context));
  EXPECT_EQ(j["params"]["checker"].get<int64_t>(), 3302928);
  // The step generated: every one of 8 trajectories wrote its planner's budget (45 tokens at least).
  EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
  EXPECT_GE(j["swaps"].get<int64_t>(), 1) << "one trainer serves three agents";
}

}  // namespace
}  // namespace clustertwin::real::flexmarl
