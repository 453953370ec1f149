// The `clustertwin trace` commands as a user runs them: exit codes and the
// one line a user reads on bad input.

#include <gtest/gtest.h>

#include "models/common/file_io.h"
#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

const std::string kTraces = std::string(CT_TEST_DATA_DIR) + "/traces/";

struct MalformedCase {
  const char* file;
  const char* expected_line;  // without the path prefix
};

class ValidateMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(ValidateMalformedTest, ExitsTwoWithOneLineNamingEventAndField) {
  const std::string path = kTraces + "malformed/" + GetParam().file;
  const auto r = run_clustertwin({"trace", "validate", path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "clustertwin: " + path + ": " + GetParam().expected_line + "\n");
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Classes, ValidateMalformedTest,
    ::testing::Values(
        MalformedCase{"missing_field.json", "event 1: missing field 'dur'"},
        MalformedCase{"wrong_type.json", "event 1: field 'ts': expected a number, got a string ('2')"},
        MalformedCase{"negative_duration.json", "event 1: field 'dur': -30 is negative (must be >= 0)"},
        MalformedCase{
            "unknown_category.json",
            "event 1: field 'cat': unknown category 'network' (allowed: compute, comm, copy, lookup, host, idle)"},
        // valid.json cut after 420 bytes: inside the name of event 1.
        MalformedCase{"truncated.json",
                      "truncated: the input ends at byte 420 inside a string (in event 1 of 'traceEvents')"},
        MalformedCase{"not_json.json", "not JSON: unexpected 'c' at byte 0"}));

TEST(TraceCliTest, ValidTraceExitsZero) {
  const auto r = run_clustertwin({"trace", "validate", kTraces + "valid.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            kTraces + "valid.json: valid: 2 events on 2 of 2 ranks, span 0.032 ms (source real, system example)\n");
}

TEST(TraceCliTest, MissingFileExitsTwo) {
  const auto r = run_clustertwin({"trace", "validate", kTraces + "nope.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "clustertwin: " + kTraces + "nope.json: no such file\n");
}

TEST(TraceCliTest, SummaryPrintsTablesAndJson) {
  const auto text = run_clustertwin({"trace", "summary", kTraces + "valid.json"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("exposed comm ms"), std::string::npos) << text.out;
  const std::string json_path = ::testing::TempDir() + "ct_cli_summary.json";
  const auto json = run_clustertwin({"trace", "summary", kTraces + "valid.json", "--json", "--json-out", json_path});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.rfind("{\"metadata\":", 0), 0u) << json.out;
  // The allreduce [2, 32) overlaps the matmul [0, 10) on rank 0 only in time, not on its own rank: all 30 us exposed.
  EXPECT_NE(json.out.find(R"({"rank":1,"comm_us":30,"exposed_comm_us":30})"), std::string::npos) << json.out;
  EXPECT_EQ(*read_file(json_path), json.out);
}

TEST(TraceCliTest, HelpAndVersionExitZero) {
  const auto help = run_clustertwin({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("trace"), std::string::npos);
  const auto sub = run_clustertwin({"trace", "summary", "--help"});
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_NE(sub.out.find("exposed communication"), std::string::npos) << sub.out;
  const auto version = run_clustertwin({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("clustertwin 0.1.0 (libtorch ", 0), 0u) << version.out;
}

TEST(TraceCliTest, BadFlagsExitTwoWithOneLine) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"trace", "validate"}, {"trace", "summary", "x.json", "--bogus"}, {"no-such-command"}, {}}) {
    const auto r = run_clustertwin(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("clustertwin: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  }
}

}  // namespace
}  // namespace clustertwin
