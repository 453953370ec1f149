// `clustertwin trace export-chakra` / `import-chakra` as a user runs them: a
// round trip simulates to the same step, files written elsewhere import and
// run, bad files exit 2 with one line.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

const std::string kData = std::string(CT_TEST_DATA_DIR) + "/chakra/";
const std::string kSource = CT_SOURCE_DIR;

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "ct_chakra_cli_" + name;
}

// The measured figures of `sim plan --json`, one row.
nlohmann::json step_of(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"sim", "plan"};
  all.insert(all.end(), args.begin(), args.end());
  all.push_back("--json");
  const auto r = run_clustertwin(all);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return {};
  const nlohmann::json row = nlohmann::json::parse(r.out)["rows"][0];
  return {{"step_time_s", row["step_time_s"]},       {"step_end_s", row["step_end_s"]},
          {"compute_s", row["compute_s"]},           {"comm_s", row["comm_s"]},
          {"exposed_comm_s", row["exposed_comm_s"]}, {"tasks", row["tasks"]}};
}

struct RoundTripCase {
  const char* plan;  // under the source tree
  int workers;
};

class ChakraRoundTripTest : public ::testing::TestWithParam<RoundTripCase> {};

// Export, import back, simulate both on the same platform: the same step to the last bit (the import gives
// back the same tasks, sizes, streams, dependencies and cost keys).
TEST_P(ChakraRoundTripTest, SimulatesTheSameStep) {
  const std::string plan = kSource + "/" + GetParam().plan;
  const std::string workers = std::to_string(GetParam().workers);
  const std::string dir = temp("rt_" + workers);
  const auto out = run_clustertwin({"trace", "export-chakra", plan, "--workers", workers, "-o", dir, "--prefix", "w"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> import = {"trace", "import-chakra"};
  for (int r = 0; r < GetParam().workers; ++r)
    import.push_back(dir + "/w." + std::to_string(r) + ".et");
  const std::string back = temp("rt_back_" + workers + ".json");
  import.insert(import.end(), {"-o", back});
  const auto in = run_clustertwin(import);
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_NE(in.out.find("# run: clustertwin sim plan " + back + " --workers " + workers + "\n"), std::string::npos)
      << in.out;
  const nlohmann::json original = step_of({plan, "--workers", workers});
  const nlohmann::json imported = step_of({back, "--workers", workers});
  EXPECT_GT(original["step_time_s"].get<double>(), 0);
  EXPECT_EQ(imported.dump(), original.dump());
}

INSTANTIATE_TEST_SUITE_P(Plans, ChakraRoundTripTest,
                         ::testing::Values(RoundTripCase{"sim/examples/plans/synthetic_overlap.json", 8},
                                           RoundTripCase{"sim/examples/plans/small_overlap.json", 4},
                                           RoundTripCase{"sim/examples/plans/ring_allreduce.json", 2}));

// A plan derived from a recorded trace (trace derive-plan on the shipped two-rank DDP example): kernels priced
// by cost keys the calibrated profile holds, so the round trip runs on that profile.
TEST(ChakraCliTest, ADerivedAndCalibratedPlanRoundTripsToTheSameStep) {
  const std::string examples = kSource + "/traces/data/examples/";
  const std::string ddp = temp("ddp.json"), run = temp("ddp_run.json"), plan = temp("ddp_plan.json");
  const std::string profile = temp("ddp.yaml"), dir = temp("ddp_et"), back = temp("ddp_back.json");
  ASSERT_EQ(run_clustertwin(
                {"trace", "import-kineto", examples + "kineto_ddp_rank0.json", examples + "kineto_ddp_rank1.json", ddp})
                .exit_code,
            0);
  ASSERT_EQ(run_clustertwin({"trace", "derive-plan", ddp, "-o", run, "--plan", plan}).exit_code, 0);
  const auto cal = run_clustertwin(
      {"calibrate", run, "--base", "h100-1024", "--warmup", "1", "--drain", "0", "--name", "ddp", "-o", profile});
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  const auto out =
      run_clustertwin({"trace", "export-chakra", plan, "--workers", "2", "--platform", profile, "-o", dir});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const std::string stem = "ct_chakra_cli_ddp_plan";
  const auto in =
      run_clustertwin({"trace", "import-chakra", dir + "/" + stem + ".0.et", dir + "/" + stem + ".1.et", "-o", back});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(*read_file(back), *read_file(plan));
  const nlohmann::json original = step_of({plan, "--workers", "2", "--platform", profile});
  EXPECT_GT(original["step_time_s"].get<double>(), 0);
  EXPECT_EQ(step_of({back, "--workers", "2", "--platform", profile}).dump(), original.dump());
}

// Chakra's text converter (DATA, 2 NPUs; tests/data/chakra/README.md): the durations go into a profile beside
// the plan, and the plan runs on it.
TEST(ChakraCliTest, TheTextConvertersFilesImportAndRun) {
  const std::string plan = temp("text_dp.json");
  const auto in =
      run_clustertwin({"trace", "import-chakra", kData + "text_dp.0.et", kData + "text_dp.1.et", "-o", plan});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  const std::string profile = temp("text_dp.profile.yaml");
  EXPECT_EQ(in.out, plan +
                        ": a plan of 7 tasks on 2 streams for 2 rank(s) from 2 file(s) of 14 nodes: 5 compute, 0 "
                        "host, 2 collective (0 send/recv), 0 copy, 0 lookup\n"
                        "# 5 task(s) priced by duration_micros: costs in " +
                        profile +
                        " (h100-1024 plus those durations)\n"
                        "# run: clustertwin sim plan " +
                        plan + " --workers 2 --platform " + profile + "\n");
  const nlohmann::json step = step_of({plan, "--workers", "2", "--platform", profile});
  // The compute stream runs fwd 100 + 200, weight-grad 240 + 120 and input-grad 160 us a step: 820 us.
  EXPECT_NEAR(step["compute_s"].get<double>(), 820e-6, 1e-12);
  EXPECT_GE(step["step_time_s"].get<double>(), 820e-6);
}

TEST(ChakraCliTest, ThePyTorchConvertersShapeImportsWithItsNotes) {
  const std::string plan = temp("pt.json");
  const auto in = run_clustertwin(
      {"trace", "import-chakra", kData + "pytorch_style.0.et", kData + "pytorch_style.1.et", "-o", plan});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_NE(in.out.find("# 2 METADATA_NODE/INVALID_NODE node(s) skipped"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("# 6 ctrl_deps not followed"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("# 1 process group(s) read from METADATA_NODEs (process_group:init)\n"), std::string::npos)
      << in.out;
  EXPECT_EQ(in.out.find("taken as the world"), std::string::npos) << in.out;
}

struct BadFile {
  const char* label;
  std::string file;     // under tests/data/chakra, or a temporary file the test writes
  std::string message;  // after "clustertwin: PATH: "
};

class ChakraBadFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(ChakraBadFileTest, ExitsTwoWithOneLine) {
  const std::string path = kData + GetParam().file;
  const auto r = run_clustertwin({"trace", "import-chakra", path, "-o", temp("bad.json")});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err, "clustertwin: " + path + ": " + GetParam().message + "\n");
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Files, ChakraBadFileTest,
    ::testing::Values(
        BadFile{"Storage", "unsupported_storage.0.et",
                "node 1 ('read_shard'): type STORAGE_NODE is not supported (supported: COMP_NODE, COMM_COLL_NODE, "
                "COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE; METADATA_NODE and INVALID_NODE are "
                "skipped)"},
        BadFile{"Reduce", "unsupported_reduce.0.et",
                "node 3 ('reduce_grads'): comm_type REDUCE is not supported (supported: ALL_REDUCE, ALL_GATHER, "
                "REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)"},
        BadFile{"MissingDep", "missing_dep.0.et", "node 1 ('bwd'): data_deps names node 99, which is not in the file"},
        BadFile{"Missing", "nope.0.et", "no such file"}),
    [](const ::testing::TestParamInfo<BadFile>& info) { return info.param.label; });

// A plan (JSON) given where a .et belongs: its '{' reads as a length of 123 bytes, and what follows is no
// Chakra message.
TEST(ChakraCliTest, APlanGivenAsATraceExitsTwoWithOneLine) {
  const std::string path = kSource + "/sim/examples/plans/synthetic_overlap.json";
  const auto r = run_clustertwin({"trace", "import-chakra", path, "-o", temp("json.json")});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("clustertwin: " + path + ": ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(ChakraCliTest, ATruncatedFileExitsTwoWithOneLine) {
  const std::string bytes = *read_file(kData + "text_dp.0.et");
  const std::string cut = temp("cut.0.et");
  ASSERT_TRUE(write_file_atomically(cut, bytes.substr(0, 200)).is_ok());
  const auto r = run_clustertwin({"trace", "import-chakra", cut, "-o", temp("cut.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("clustertwin: " + cut + ": truncated: node message ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(ChakraCliTest, ExportRejectsAWorldThePlanDoesNotFit) {
  // ring_allreduce.json at 0 workers, then at more than the platform has.
  const std::string plan = kSource + "/sim/examples/plans/ring_allreduce.json";
  const auto zero = run_clustertwin({"trace", "export-chakra", plan, "--workers", "0", "-o", temp("x")});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err, "clustertwin: --workers 0: must be >= 1\n");
  const auto big = run_clustertwin({"trace", "export-chakra", plan, "--workers", "4096", "-o", temp("x")});
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("4096"), std::string::npos) << big.err;
}

// The files go into -o and nowhere else: a prefix that is a path is refused before anything is written.
TEST(ChakraCliTest, ExportRefusesAPrefixThatLeavesTheFolder) {
  const std::string plan = kSource + "/sim/examples/plans/ring_allreduce.json";
  const std::string out = temp("prefix_out");
  std::filesystem::remove_all(out);
  const auto r = run_clustertwin({"trace", "export-chakra", plan, "--workers", "2", "-o", out, "--prefix", "../x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "clustertwin: --prefix '../x': a file name without '/' (the files go into the -o folder)\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace clustertwin
