// clustertwin does not load libtorch; its torch commands run in
// clustertwin-torch, executed in the same process with the same arguments.

#include <gtest/gtest.h>
#include <stdlib.h>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;
using testing::run_command;

TEST(TorchForwardTest, TheTwinProgramLinksNoLibtorch) {
  const auto r = run_command({"/usr/bin/ldd", CT_CLI_PATH});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("libsimgrid"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libtorch"), std::string::npos) << r.out;
}

TEST(TorchForwardTest, TorchCommandsAnswerThroughClustertwin) {
  const auto version = run_clustertwin({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("libtorch"), std::string::npos) << version.out;
  // Help, options and exit codes are clustertwin-torch's, under clustertwin's name.
  const auto help = run_clustertwin({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("Usage: clustertwin run"), std::string::npos) << help.out;
  const auto bad = run_clustertwin({"sis", "study", "--no-such-flag"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(bad.err.rfind("clustertwin: ", 0), 0u) << bad.err;
  // The top-level help lists them beside the twin's commands.
  const auto top = run_clustertwin({"--help"});
  for (const char* name : {"eval", "igsp", "prune", "run", "sis", "sim", "plan"})
    EXPECT_NE(top.out.find(std::string("\n  ") + name + " "), std::string::npos) << name << "\n" << top.out;
}

TEST(TorchForwardTest, AMissingTorchProgramIsOneLineAndExitOne) {
  ::setenv("CT_TORCH_PROGRAM", "/nonexistent/clustertwin-torch", 1);  // inherited by the command
  const auto r = run_clustertwin({"run", "collectives"});
  ::unsetenv("CT_TORCH_PROGRAM");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "clustertwin: cannot run /nonexistent/clustertwin-torch (No such file or directory): the commands eval, "
            "igsp, prune, run and sis need it installed beside clustertwin\n");
}

}  // namespace
}  // namespace clustertwin
