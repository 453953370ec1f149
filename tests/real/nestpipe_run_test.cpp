// `clustertwin run nestpipe` as a user starts it: 4 ranks through
// `clustertwin launch`, 20 batches, seed 7. The paper's claims, checked the
// way TorchRec checks its own pipelines: from identical weights on identical
// batches, DBP and FWP end with bitwise identical state to synchronous
// TorchRec with the same micro-batch split; NestPipe (clustering reorders
// samples, so sums round differently) within 1e-6; and the per-row version
// oracle flags the semi-synchronous pipeline and DBP without its patch.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/file_io.h"
#include "common/state_dump.h"
#include "tests/cli/run_command.h"
#include "traces/validator.h"

namespace clustertwin::real::nestpipe {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;

constexpr int kRanks = 4;

std::string temp_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "ct_nestpipe_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Runs `launch --nproc 4 -- run nestpipe --steps 20 --seed 7 --json ARGS`.
CommandResult run_nestpipe(const std::vector<std::string>& args) {
  std::vector<std::string> all = {
      "launch", "--nproc", std::to_string(kRanks), "--", "run", "nestpipe", "--steps", "20", "--seed", "7", "--json"};
  all.insert(all.end(), args.begin(), args.end());
  return run_clustertwin(all);
}

// The integer field `name` of rank 0's JSON line.
int64_t json_int(const std::string& out, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t line = out.find("[rank 0] {");
  const size_t at = out.find(key, line == std::string::npos ? 0 : line);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no " << name << " in " << out;
    return -1;
  }
  return std::stoll(out.substr(at + key.size()));
}

StateDump read_dump(const std::string& dir, int rank) {
  auto d = read_state_dump(state_dump_path(dir, rank));
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.is_ok() ? *d : StateDump{};
}

void expect_identical_dumps(const std::string& dir, const std::string& reference) {
  for (int r = 0; r < kRanks; ++r) {
    const auto a = read_file(state_dump_path(dir, r));
    const auto b = read_file(state_dump_path(reference, r));
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << dir << " rank " << r;
    EXPECT_TRUE(*a == *b) << dir << " rank " << r << " differs from " << reference;
  }
}

// max |a - b| / max |b| over each tensor, the worst over tensors and ranks.
double worst_relative_difference(const std::string& dir, const std::string& reference) {
  double worst = 0;
  for (int r = 0; r < kRanks; ++r) {
    const StateDump a = read_dump(dir, r), b = read_dump(reference, r);
    EXPECT_EQ(a.tensors.size(), b.tensors.size());
    for (size_t t = 0; t < std::min(a.tensors.size(), b.tensors.size()); ++t) {
      EXPECT_EQ(a.tensors[t].name, b.tensors[t].name);
      EXPECT_EQ(a.tensors[t].shape, b.tensors[t].shape);
      const std::vector<double> x = a.tensors[t].values(), y = b.tensors[t].values();
      double diff = 0, scale = 0;
      for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
        diff = std::max(diff, std::abs(x[i] - y[i]));
        scale = std::max(scale, std::abs(y[i]));
      }
      worst = std::max(worst, scale > 0 ? diff / scale : diff);
    }
  }
  return worst;
}

// One test per embedding optimizer: four runs each (the state they compare
// is too big to share between tests, which ctest runs as processes).
void check_variants_against_torchrec(const std::string& optimizer) {
  const std::string torchrec = temp_dir(optimizer + "_torchrec");
  const CommandResult t = run_nestpipe({"--variant", "torchrec", "--optimizer", optimizer, "--dump-state", torchrec});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(json_int(t.out, "stale_rows"), 0);
  for (const std::string variant : {"dbp", "fwp", "nestpipe"}) {
    const std::string dir = temp_dir(optimizer + "_" + variant);
    const CommandResult r = run_nestpipe({"--variant", variant, "--optimizer", optimizer, "--dump-state", dir});
    ASSERT_EQ(r.exit_code, 0) << variant << ": " << r.err;
    EXPECT_EQ(json_int(r.out, "stale_rows"), 0) << variant;
    if (variant == "nestpipe") {
      const double worst = worst_relative_difference(dir, torchrec);
      std::printf("nestpipe vs torchrec (%s): worst relative difference %.3g\n", optimizer.c_str(), worst);
      EXPECT_LE(worst, 1e-6);
    } else {
      expect_identical_dumps(dir, torchrec);
    }
    if (variant != "fwp") {
      EXPECT_GT(json_int(r.out, "patched_rows"), 0) << variant;
    }
  }
}

TEST(NestPipeRunTest, SgdDbpAndFwpAreBitwiseTorchRecAndNestPipeWithin1e6) {
  check_variants_against_torchrec("sgd");
}

TEST(NestPipeRunTest, AdagradDbpAndFwpAreBitwiseTorchRecAndNestPipeWithin1e6) {
  check_variants_against_torchrec("adagrad");
}

TEST(NestPipeRunTest, TheOracleFlagsSemiSyncAndDbpWithoutThePatch) {
  const CommandResult semisync = run_nestpipe({"--variant", "semisync"});
  ASSERT_EQ(semisync.exit_code, 0) << semisync.err;
  EXPECT_GT(json_int(semisync.out, "stale_rows"), 0);
  const CommandResult no_patch = run_nestpipe({"--variant", "dbp", "--no-patch"});
  ASSERT_EQ(no_patch.exit_code, 0) << no_patch.err;
  EXPECT_GT(json_int(no_patch.out, "stale_rows"), 0);
  EXPECT_EQ(json_int(no_patch.out, "patched_rows"), 0);
  // Rows and tables say which run was the negative control.
  EXPECT_NE(no_patch.out.find("{\"variant\":\"dbp\",\"no_patch\":true,"), std::string::npos) << no_patch.out;
  EXPECT_NE(semisync.out.find("{\"variant\":\"semisync\",\"no_patch\":false,"), std::string::npos) << semisync.out;
  const CommandResult table = run_clustertwin(
      {"launch", "--nproc", "2", "--", "run", "nestpipe", "--steps", "4", "--variant", "dbp", "--no-patch"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("[rank 0]   dbp-nopatch "), std::string::npos) << table.out;

  // semisync reads batch b's rows before batch b-1's update, so the first
  // stale row is in batch 1, read at version 0 where batch 0 made it 1.
  const CommandResult strict = run_nestpipe({"--variant", "semisync", "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.err.find("[rank 0] clustertwin: --strict: the version oracle found "), std::string::npos)
      << strict.err;
  EXPECT_NE(strict.err.find("stale rows; the first: batch 1, key "), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find("was read at version 0, expected version 1\n"), std::string::npos) << strict.err;
}

TEST(NestPipeRunTest, TraceIsValidAndCarriesThePlan) {
  const std::string trace = ::testing::TempDir() + "ct_nestpipe_trace.json";
  const CommandResult r = run_nestpipe({"--variant", "nestpipe", "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CommandResult validate = run_clustertwin({"trace", "validate", trace});
  EXPECT_EQ(validate.exit_code, 0) << validate.out << validate.err;
  traces::ValidationStats stats;
  ASSERT_TRUE(traces::validate_trace(trace, &stats).is_ok());
  EXPECT_EQ(stats.ranks_seen, kRanks);
  EXPECT_EQ(stats.metadata.system, "nestpipe");
  EXPECT_EQ(stats.metadata.variant, "nestpipe");
  const std::string& config = stats.metadata.config_json;
  EXPECT_NE(config.find("\"plan\":{"), std::string::npos) << config.substr(0, 300);
  EXPECT_NE(config.find("\"emb_a2a_fwd[3]\""), std::string::npos);
  EXPECT_NE(config.find("\"sizes\":{\"input_bytes\":"), std::string::npos);
  EXPECT_NE(config.find("\"options\":{\"variant\":\"nestpipe\""), std::string::npos);
  // Every task of the plan ran once per batch on every rank, and nothing
  // else was kept (the pipeline's fill and drain do no work): the nestpipe
  // plan with 4 micro-batches has 4 + 4 x 4 + 3 = 23 tasks (h2d, key_a2a,
  // lookup_gather, lookup_copy; emb_a2a_fwd, dense_fwd, dense_bwd and
  // emb_a2a_bwd per micro-batch; emb_update, dense_allreduce, dbp_patch).
  EXPECT_EQ(stats.events, int64_t{kRanks} * 20 * 23);
}

// Bad input stops every rank before the rendezvous with one line, exit 2.
// One process is enough to see the line; no launcher prefixes it.
struct BadInput {
  std::vector<std::string> args;
  std::string message;
};

TEST(NestPipeRunTest, BadInputIsOneLineAndExit2) {
  const std::string bad_criteo = std::string(CT_TEST_DATA_DIR) + "/criteo/bad_integer.tsv";
  const std::vector<BadInput> cases = {
      {{"--micro-batches", "3"}, "--micro-batches 3: must divide batch 64"},
      {{"--variant", "pipedream"},
       "--variant 'pipedream': unknown variant (allowed: torchrec, semisync, dbp, fwp, nestpipe)"},
      {{"--variant", "2dsp"},
       "--variant 2dsp: twin-only (its replicas synchronise periodically, not every step); run it with "
       "'clustertwin sim', or run one of torchrec, semisync, dbp, fwp, nestpipe"},
      {{"--criteo", bad_criteo}, bad_criteo + ":3: field 'I5' (column 6): 'abc' is not an integer"},
      {{"--variant", "fwp", "--no-patch"}, "--no-patch: variant fwp has no patch (only dbp and nestpipe)"},
  };
  for (const BadInput& c : cases) {
    std::vector<std::string> args = {"run", "nestpipe"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CommandResult r = run_clustertwin(args);
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_EQ(r.err, "clustertwin: " + c.message + "\n");
  }
  // Through the launcher every rank says the same and the launcher exits 2.
  const CommandResult launched = run_nestpipe({"--micro-batches", "3"});
  EXPECT_EQ(launched.exit_code, 2);
  EXPECT_NE(launched.err.find("] clustertwin: --micro-batches 3: must divide batch 64\n"), std::string::npos)
      << launched.err;
}

TEST(NestPipeRunTest, TrainsOnACriteoFile) {
  // 4 ranks x batch 8 x 3 steps = 96 lines: sample.tsv's four lines repeated.
  const auto sample = read_file(std::string(CT_TEST_DATA_DIR) + "/criteo/sample.tsv");
  ASSERT_TRUE(sample.is_ok());
  std::string text;
  for (int i = 0; i < 24; ++i)
    text += *sample;
  const std::string path = ::testing::TempDir() + "ct_nestpipe_criteo.tsv";
  ASSERT_TRUE(write_file_atomically(path, text).is_ok());
  const CommandResult r = run_clustertwin({"launch", "--nproc", "4", "--", "run", "nestpipe", "--criteo", path,
                                           "--batch", "8", "--steps", "3", "--variant", "nestpipe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_int(r.out, "stale_rows"), 0);
  // One step more than the file holds: named before any rank trains.
  const CommandResult short_file =
      run_clustertwin({"run", "nestpipe", "--criteo", path, "--batch", "8", "--steps", "13"});
  EXPECT_EQ(short_file.exit_code, 2);
  EXPECT_EQ(short_file.err,
            "clustertwin: " + path + ": 96 lines, the run needs 104 (world 1 x samples 8 x batches 13)\n");
}

}  // namespace
}  // namespace clustertwin::real::nestpipe
