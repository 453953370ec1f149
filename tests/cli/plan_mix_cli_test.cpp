// `clustertwin plan mix` as a user runs it: the example's answer, the same
// bytes twice, and one line with exit code 2 for bad mix files and flags.

#include <gtest/gtest.h>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::expect_one_line_exit_2;
using testing::run_clustertwin;
using testing::write_temp;

const std::string kMixes = std::string(CT_SOURCE_DIR) + "/sim/examples/mixes/";

TEST(PlanMixCliTest, TheExampleAnswersWithPodsOfTheirOwn) {
  const auto r = run_clustertwin({"plan", "mix", kMixes + "plan-two-jobs.yaml", "--parallel", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("answer: 6 nodes (llm 3, vit 3), placement isolated; minimal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#   packed: misses"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# assumed:"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("plan mix: llm alone at"), std::string::npos) << r.err;  // progress on stderr
}

TEST(PlanMixCliTest, WithoutIsolatedAJobGrowsAndJsonIsTheSameBytesTwice) {
  const std::vector<std::string> args = {
      "plan", "mix", kMixes + "plan-two-jobs.yaml", "--placements", "packed,spread", "--json", "--parallel", "2"};
  const auto first = run_clustertwin(args);
  const auto second = run_clustertwin(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  EXPECT_NE(first.out.find("\"feasible\": true"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("\"lower_bound_nodes\": 6"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("\"one_node_fewer\""), std::string::npos) << first.out;
}

TEST(PlanMixCliTest, BadMixFilesAndFlagsExit2WithOneLine) {
  const std::string profile = kMixes + "four-pods-3to1.yaml";
  const std::string dp = "data_parallel: {compute: 10ms, allreduce_bytes: 64MiB}";
  struct Case {
    std::string yaml;
    std::string part;
  } cases[] = {
      {"profile: " + profile + "\njobs: [{name: a, target: {samples_per_s: 0, batch_per_worker: 8}, " + dp + "}]\n",
       "bad_plan_mix.yaml: field 'jobs[0].target.samples_per_s': 0 must be > 0"},
      {"profile: " + profile + "\njobs: [{name: a, target: {samples_per_s: -3e4, batch_per_worker: 8}, " + dp + "}]\n",
       "bad_plan_mix.yaml: field 'jobs[0].target.samples_per_s': -3e4 must be > 0"},
      {"profile: " + profile + "\njobs: [{name: a, " + dp + "}]\n",
       "bad_plan_mix.yaml: field 'jobs[0].workers': missing: give workers (the job's size), or a target"},
      {"profile: " + profile + "\njobs: [{name: a, target: {steps_per_s: 20}, " + dp + "}]\n",
       "bad_plan_mix.yaml: field 'jobs[0].target.steps_per_s': needs the job's workers"},
  };
  for (const Case& c : cases) {
    const std::string mix = write_temp("bad_plan_mix.yaml", c.yaml);
    expect_one_line_exit_2(run_clustertwin({"plan", "mix", mix}), c.part);
  }
  const std::string good = write_temp(
      "good_plan_mix.yaml",
      "profile: " + profile + "\njobs: [{name: a, target: {samples_per_s: 1000, batch_per_worker: 8}, " + dp + "}]\n");
  expect_one_line_exit_2(run_clustertwin({"plan", "mix", good, "--placements", "packed,tight"}),
                         "--placements 'tight': unknown policy (allowed: packed, spread, random, isolated)");
}

TEST(PlanMixCliTest, ATargetTheClusterCannotReachExits3) {
  const std::string mix = write_temp(
      "huge_plan_mix.yaml", "profile: " + kMixes +
                                "four-pods-3to1.yaml\njobs: [{name: a, target: {samples_per_s: 1e9, batch_per_worker: "
                                "8}, data_parallel: {compute: 10ms, allreduce_bytes: 64MiB}}]\n");
  const auto r = run_clustertwin({"plan", "mix", mix, "--parallel", "2"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("no answer: job 'a' alone needs at least"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace clustertwin
