// clustertwin validate: the command names no system; each system's side
// (cli/SYSTEM/validate.cpp) brings its help and its own options, and an
// option of one system given to another is refused, not ignored.

#include <gtest/gtest.h>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::expect_one_line_exit_2;
using testing::run_clustertwin;

TEST(ValidateCliTest, TheHelpListsEverySystemOfTheRegistry) {
  const auto r = run_clustertwin({"validate", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* system : {"nestpipe (", "flexmarl (", "flowtrain ("})
    EXPECT_NE(r.out.find(system), std::string::npos) << system;
  // FlexMARL's own option, registered by its side of the command.
  EXPECT_NE(r.out.find("--scale-costs"), std::string::npos);
}

TEST(ValidateCliTest, ASystemsOwnOptionIsRefusedForAnother) {
  const auto r = run_clustertwin({"validate", "nestpipe", "--real", "run.json", "--scale-costs", "generate=2"});
  expect_one_line_exit_2(r, "--scale-costs: an option of validate flexmarl, not of validate nestpipe");
}

TEST(ValidateCliTest, CoresIsRefusedForATwinThatRunsOnNoCores) {
  const auto r = run_clustertwin({"validate", "nestpipe", "--real", "run.json", "--cores", "4"});
  expect_one_line_exit_2(r, "--cores 4: validate nestpipe runs no twin on the machine's cores");
  const auto c = run_clustertwin({"validate", "collectives", "--real", "bench.json", "--cores", "4"});
  expect_one_line_exit_2(c, "--cores 4: validate collectives runs no twin");
}

TEST(ValidateCliTest, CoresReachesAProcessTwin) {
  // Accepted for flexmarl: the run then fails on the missing trace, not on --cores.
  const auto r = run_clustertwin({"validate", "flexmarl", "--real", "missing-run.json", "--cores", "4"});
  expect_one_line_exit_2(r, "missing-run.json");
}

}  // namespace
}  // namespace clustertwin
