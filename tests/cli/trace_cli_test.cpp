// The `clustertwin trace` commands as a user runs them: exit codes and the
// one line a user reads on bad input.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_io.h"
#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

const std::string kTraces = std::string(CT_TEST_DATA_DIR) + "/traces/";

// A command that must succeed: its stderr on failure.
bool ok(const testing::CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0;
}

// `sim plan PLAN --workers N --platform PROFILE`'s step time, ms: the row after the table's header (workers,
// fidelity, step (ms), ...).
double sim_plan_step_ms(const std::string& plan, int workers, const std::string& profile) {
  const auto r = run_clustertwin({"sim", "plan", plan, "--workers", std::to_string(workers), "--platform", profile});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t row = r.out.find("\n", r.out.find("step (ms)"));
  std::istringstream in(r.out.substr(row + 1));
  int n = 0;
  std::string fidelity;
  double ms = 0;
  in >> n >> fidelity >> ms;
  EXPECT_EQ(n, workers) << r.out;
  return ms;
}

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

// Bring your own trace, end to end on the synthetic data-parallel example
// (traces/data/examples/make_kineto_ddp.py): import, derive the plan,
// calibrate from the trace alone, and the twin replays the recorded 1 ms
// step on 2 ranks, then answers for 16.
TEST(TraceCliTest, AnImportedTraceIsCalibratedAndRunAtAnotherWorkerCount) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR"));
  const std::string examples = std::string(CT_SOURCE_DIR) + "/traces/data/examples/";
  ASSERT_TRUE(ok(run_clustertwin({"trace", "import-kineto", examples + "kineto_ddp_rank0.json",
                                  examples + "kineto_ddp_rank1.json", dir + "/ddp.json"})));
  const auto derived = run_clustertwin(
      {"trace", "derive-plan", dir + "/ddp.json", "-o", dir + "/run.json", "--plan", dir + "/plan.json"});
  ASSERT_TRUE(ok(derived));
  EXPECT_NE(derived.out.find("a plan of 8 tasks on 3 streams (4 cross-stream dependencies)"), std::string::npos)
      << derived.out;
  ASSERT_TRUE(ok(run_clustertwin({"calibrate", dir + "/run.json", "--base", "h100-1024", "--warmup", "1", "--drain",
                                  "0", "-o", dir + "/mine.yaml"})));
  auto step_ms = [&](int workers) { return sim_plan_step_ms(dir + "/plan.json", workers, dir + "/mine.yaml"); };
  EXPECT_NEAR(step_ms(2), 1.000, 0.0005);  // the recorded step
  const double at_16 = step_ms(16);
  EXPECT_GT(at_16, 1.05);  // the all-reduces slow down with 8x the ranks; the GEMMs do not
  EXPECT_LT(at_16, 1.5);
}

// A cost key the plan needs that the fitted steps hold no sample of, and the base cannot price (host work has
// no roofline): calibrate refuses it with one line naming the trace, rather than writing a profile that validate
// or sim plan would then fail on.
TEST(TraceCliTest, CalibrateRefusesAKeyItHasNoSampleOf) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR"));
  const std::string examples = std::string(CT_SOURCE_DIR) + "/traces/data/examples/";
  ASSERT_TRUE(ok(run_clustertwin({"trace", "import-kineto", examples + "kineto_ddp_rank0.json",
                                  examples + "kineto_ddp_rank1.json", dir + "/ddp2.json"})));
  ASSERT_TRUE(ok(run_clustertwin({"trace", "derive-plan", dir + "/ddp2.json", "-o", dir + "/run2.json"})));
  auto text = read_file(dir + "/run2.json");
  ASSERT_TRUE(text.is_ok());
  // Drop every event of the host tail: the plan still has the task, no step has a sample of it.
  nlohmann::json trace = nlohmann::json::parse(*text);
  nlohmann::json kept = nlohmann::json::array();
  int dropped = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("name", "") == "host tail") {
      ++dropped;
      continue;
    }
    kept.push_back(e);
  }
  ASSERT_GT(dropped, 0) << *text;
  trace["traceEvents"] = kept;
  ASSERT_TRUE(write_file_atomically(dir + "/run2.json", trace.dump()).is_ok());
  const auto r = run_clustertwin({"calibrate", dir + "/run2.json", "--base", "h100-1024", "--warmup", "1", "--drain",
                                  "0", "-o", dir + "/none.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "clustertwin: " + dir +
                       "/run2.json: task 'host tail': host work has no roofline; cost key 'host tail' is not in the "
                       "costs of profile 'h100-1024' (no sample of it in the fitted steps: give more steps, or "
                       "--warmup 0)\n");
}

// On a base with a GPU node's host, calibrate takes the host's launch cost from the launches the profiler
// linked to their kernels: make_kineto_device_bound.py's cudaLaunchKernel calls take 4.5 us each.
TEST(TraceCliTest, CalibrateFitsAGpuNodesLaunchCostFromTheLaunches) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR"));
  const std::string examples = std::string(CT_SOURCE_DIR) + "/traces/data/examples/";
  ASSERT_TRUE(ok(
      run_clustertwin({"trace", "import-kineto", examples + "kineto_device_bound_rank0.json", dir + "/bound.json"})));
  ASSERT_TRUE(ok(run_clustertwin({"trace", "derive-plan", dir + "/bound.json", "-o", dir + "/bound_run.json"})));
  const auto r = run_clustertwin({"calibrate", dir + "/bound_run.json", "--base", "h200-1gpu", "--warmup", "1",
                                  "--drain", "0", "--json", "-o", dir + "/bound.yaml"});
  ASSERT_TRUE(ok(r)) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j.at("host_launch").at("seconds").get<double>(), 4.5e-6, 1e-12);
  EXPECT_EQ(j.at("host_launch").at("launches").get<int>(), 150);  // 3 steps x 50 kernels
  auto yaml = read_file(dir + "/bound.yaml");
  ASSERT_TRUE(yaml.is_ok());
  EXPECT_NE(yaml->find("launch: 4.5e-06"), std::string::npos) << *yaml;
}

TEST(TraceCliTest, DerivePlanRefusesTracesThatDoNotRepeatOnePlan) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR"));
  const std::string examples = std::string(CT_SOURCE_DIR) + "/traces/data/examples/";
  // The two-rank fixture: rank 1 runs a memset where rank 0 runs a second GEMM.
  ASSERT_EQ(run_clustertwin({"trace", "import-kineto", examples + "kineto_two_rank_rank0.json",
                             examples + "kineto_two_rank_rank1.json", dir + "/two.json"})
                .exit_code,
            0);
  const auto r = run_clustertwin({"trace", "derive-plan", dir + "/two.json", "-o", dir + "/two_run.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "clustertwin: " + dir +
                       "/two.json: rank 1, step 0, stream 'stream 7': event 3 is 'Memset' where rank 0's step 0 has "
                       "'ampere_sgemm_128x64_tn' (every rank and step from the template on must run the same plan)\n");
  const auto negative =
      run_clustertwin({"trace", "derive-plan", dir + "/two.json", "-o", dir + "/x.json", "--min-wait-us", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_EQ(negative.err, "clustertwin: --min-wait-us -1: must be >= 0\n");
  const auto missing = run_clustertwin({"trace", "derive-plan", dir + "/none.json", "-o", dir + "/x.json"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
}

// A two-stage pipeline (traces/data/examples/make_kineto_pipeline.py): each rank gets its stage's tasks, the
// sends meet their recvs, and the twin replays the recorded 1.4 ms step on 2 ranks.
TEST(TraceCliTest, APipelineTraceIsDerivedCalibratedAndReplayed) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR"));
  const std::string examples = std::string(CT_SOURCE_DIR) + "/traces/data/examples/";
  ASSERT_TRUE(ok(run_clustertwin({"trace", "import-kineto", examples + "kineto_pipeline_rank0.json",
                                  examples + "kineto_pipeline_rank1.json", dir + "/pp.json"})));
  const auto derived = run_clustertwin(
      {"trace", "derive-plan", dir + "/pp.json", "-o", dir + "/pp_run.json", "--plan", dir + "/pp_plan.json"});
  ASSERT_TRUE(ok(derived));
  // Per rank: 5 kernels and 2 host pieces; 4 device waits (send after forward, backward after recv on rank 0;
  // forward after recv, send after backward on rank 1) and each rank's first kernel after its host piece.
  EXPECT_NE(derived.out.find("a plan of 14 tasks on 5 streams (6 cross-stream dependencies) from ranks 0, 1's "
                             "step 1 (one per group of ranks that run alike)"),
            std::string::npos)
      << derived.out;
  ASSERT_TRUE(ok(run_clustertwin({"calibrate", dir + "/pp_run.json", "--base", "h100-1024", "--warmup", "1", "--drain",
                                  "0", "-o", dir + "/pp.yaml"})));
  auto step_ms = [](const std::string& plan, const std::string& profile) { return sim_plan_step_ms(plan, 2, profile); };
  EXPECT_NEAR(step_ms(dir + "/pp_plan.json", dir + "/pp.yaml"), 1.400, 0.014);  // the recorded step, within 1%
  // The device alone (--no-host-tasks): one step is the chain rank 0's forward (202.5 us, the forward GEMM's
  // key pools rank 0's 205 and rank 1's 200), the activations' transfer (20), rank 1's forward and backward
  // (202.5 + 400), the gradients' transfer (20), rank 0's backward and Adam (400 + 30): 1,275 us. Priced from
  // each side's own ready, the recvs' waits for their sends (rank 0's recv kernel of the gradients runs 621 us)
  // would inflate the transfers' key.
  ASSERT_TRUE(ok(run_clustertwin({"trace", "derive-plan", dir + "/pp.json", "-o", dir + "/pp_dev_run.json", "--plan",
                                  dir + "/pp_dev_plan.json", "--no-host-tasks"})));
  ASSERT_TRUE(ok(run_clustertwin({"calibrate", dir + "/pp_dev_run.json", "--base", "h100-1024", "--warmup", "1",
                                  "--drain", "0", "-o", dir + "/pp_dev.yaml"})));
  EXPECT_NEAR(step_ms(dir + "/pp_dev_plan.json", dir + "/pp_dev.yaml"), 1.275, 0.0005);
}

TEST(TraceCliTest, DerivePlanRefusesAPipelineWhoseSendsDoNotMeetTheirRecvs) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR"));
  const std::string examples = std::string(CT_SOURCE_DIR) + "/traces/data/examples/";
  // Rank 0's file alone: its world is still 2 ranks (distributedInfo), and rank 1 posts no recv.
  ASSERT_EQ(
      run_clustertwin({"trace", "import-kineto", examples + "kineto_pipeline_rank0.json", dir + "/pp0.json"}).exit_code,
      0);
  const auto lone = run_clustertwin({"trace", "derive-plan", dir + "/pp0.json", "-o", dir + "/x.json"});
  EXPECT_EQ(lone.exit_code, 2);
  EXPECT_EQ(lone.err,
            "clustertwin: " + dir +
                "/pp0.json: rank 0, step 0, stream 'gpu0 stream 24': event "
                "'ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)': send #1 to rank 1, a rank "
                "without events in this trace (import every rank's file, so that each send meets its recv)\n");
  // A send to rank 5 in a world of 2.
  auto read = read_file(examples + "kineto_pipeline_rank0.json");
  ASSERT_TRUE(read.is_ok());
  std::string text = *read;
  for (size_t at = text.find("\"Dst Rank\": 1"); at != std::string::npos; at = text.find("\"Dst Rank\": 1", at))
    text.replace(at, 13, "\"Dst Rank\": 5");
  const std::string bad = testing::write_temp("pp_bad_rank0.json", text);
  ASSERT_EQ(run_clustertwin({"trace", "import-kineto", bad, examples + "kineto_pipeline_rank1.json", dir + "/ppb.json"})
                .exit_code,
            0);
  const auto outside = run_clustertwin({"trace", "derive-plan", dir + "/ppb.json", "-o", dir + "/x.json"});
  testing::expect_one_line_exit_2(outside,
                                  "/ppb.json: rank 0, step 0, stream 'gpu0 stream 24': event "
                                  "'ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)': a send "
                                  "to rank 5, outside the world of 2 ranks (metadata.world_size)");
}

// import-kineto writes its output atomically: an input named as the output would be replaced, so it is refused
// and the input stays as it was.
TEST(TraceCliTest, ImportRefusesToWriteOverItsInput) {
  const std::string copy = ::testing::TempDir() + "ct_trace_cli_input.json";
  std::filesystem::copy_file(std::string(CT_SOURCE_DIR) + "/traces/data/examples/kineto_ddp_rank0.json", copy,
                             std::filesystem::copy_options::overwrite_existing);
  const std::string before = *read_file(copy);
  const auto r = run_clustertwin({"trace", "import-kineto", copy, copy});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "clustertwin: trace import-kineto: output '" + copy + "' is the input '" + copy +
                       "'; give a new file for the output\n");
  EXPECT_EQ(*read_file(copy), before);
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
