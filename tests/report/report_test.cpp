// ct_report, the demo's page: bad input is one line naming the file or
// field with exit code 2, and a page is written atomically from study
// outputs (the full run is DemoTest.MakeDemoWritesTheReport, label slow);
// the demo script's own argument check.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_command;

std::string scratch(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "ct_report_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void expect_line(const testing::CommandResult& r, int code, const std::string& line) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(r.err, "ct_report: " + line + "\n");
}

TEST(ReportTest, BadArgumentsAreOneLineAndExitTwo) {
  expect_line(run_command({CT_REPORT_PATH}), 2, "give OUT_DIR (usage: ct_report OUT_DIR; --help explains)");
  const auto help = run_command({CT_REPORT_PATH, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("OUT_DIR"), std::string::npos);
  const auto nowhere = run_command({CT_REPORT_PATH, "/nonexistent/ct_report"});
  EXPECT_EQ(nowhere.exit_code, 2);
  EXPECT_NE(nowhere.err.find("/nonexistent/ct_report: not a folder"), std::string::npos) << nowhere.err;
}

// scripts/demo.sh (make demo) checks its arguments before running anything:
// a bad JOBS or a wrong count is one line on stderr and exit code 2.
TEST(DemoScriptTest, BadArgumentsAreOneLineAndExitTwo) {
  const std::string demo = std::string(CT_SOURCE_DIR) + "/scripts/demo.sh";
  const std::string out = scratch("demo_args");
  for (const std::string jobs : {"abc", "0", "-1", "2x", ""}) {
    const auto r = run_command({"/bin/bash", demo, "/nonexistent/build", out, jobs});
    EXPECT_EQ(r.exit_code, 2) << jobs << ": " << r.err;
    EXPECT_EQ(r.err, "demo: JOBS '" + jobs + "' is not a positive integer\n");
    EXPECT_EQ(r.out, "");
  }
  const auto few = run_command({"/bin/bash", demo, "/nonexistent/build", out});
  EXPECT_EQ(few.exit_code, 2);
  EXPECT_EQ(few.err.rfind("usage: scripts/demo.sh BUILD_DIR OUT_DIR JOBS", 0), 0u) << few.err;
  EXPECT_EQ(std::count(few.err.begin(), few.err.end(), '\n'), 1) << few.err;
  EXPECT_TRUE(std::filesystem::is_empty(out));  // nothing was started
}

TEST(ReportTest, MissingOrMalformedStudyOutputsNameTheFile) {
  const std::string dir = scratch("empty");
  expect_line(run_command({CT_REPORT_PATH, dir}), 2,
              dir + "/nestpipe/scaling.json: cannot open (No such file or directory)");
  std::filesystem::create_directories(dir + "/nestpipe");
  std::ofstream(dir + "/nestpipe/scaling.json") << "{\"rows\": [";
  const auto truncated = run_command({CT_REPORT_PATH, dir});
  EXPECT_EQ(truncated.exit_code, 2);
  EXPECT_NE(truncated.err.find(dir + "/nestpipe/scaling.json: not valid JSON"), std::string::npos) << truncated.err;
  std::ofstream(dir + "/nestpipe/scaling.json") << "[1, 2]";
  std::ofstream(dir + "/nestpipe/gpu128.json") << "{}";
  expect_line(run_command({CT_REPORT_PATH, dir}), 2,
              dir + "/nestpipe/scaling.json: the top level is an array, expected an object");
  EXPECT_FALSE(std::filesystem::exists(dir + "/report/index.html"));
}

}  // namespace
}  // namespace clustertwin
