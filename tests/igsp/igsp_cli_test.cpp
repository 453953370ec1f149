// clustertwin prune and eval on a small trained checkpoint: they run, and
// each bad input the IGSP issue names is one line with exit code 2.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "real/igsp/train.h"
#include "tests/cli/run_command.h"
#include "tests/igsp/tiny_training.h"

namespace clustertwin::real::igsp {
namespace {

using clustertwin::testing::run_clustertwin;

std::string trained_checkpoint() {
  TrainOptions o = testing::tiny_train_options(testing::tiny_corpus_root("ct_igsp_cli_root"),
                                               ::testing::TempDir() + "ct_igsp_cli.pt");
  o.max_steps = 5;
  auto r = train_byte_lm(o, nullptr);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return o.out;
}

TEST(IgspCliTest, PruneThenEval) {
  const std::string model = trained_checkpoint();
  const std::string out = ::testing::TempDir() + "ct_igsp_cli_pruned.pt";
  const auto p = run_clustertwin(
      {"prune", "--model", model, "--out", out, "--sparsity", "0.5", "--samples", "8", "--calib", "math,commonsense"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("50.00% of their weights zero"), std::string::npos) << p.out;
  const auto e = run_clustertwin({"eval", "--model", out, "--items", "5", "--json"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto j = nlohmann::json::parse(e.out);
  ASSERT_EQ(j.at("scores").size(), 4u);
  EXPECT_EQ(j.at("scores")[2].at("dimension"), "math");
  for (const char* calib : {"igsp", "random", "mix"}) {
    const auto c = run_clustertwin({"prune", "--model", model, "--out", out, "--samples", "4", "--calib", calib});
    EXPECT_EQ(c.exit_code, 0) << calib << ": " << c.err;
  }
  const auto manifest = run_clustertwin({"igsp", "manifest", "--model", out});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  const auto m = nlohmann::json::parse(manifest.out);
  EXPECT_EQ(m.at("seed"), 4);
  EXPECT_EQ(m.at("pruned").at("calib"), "mix");
  EXPECT_FALSE(m.at("corpus").empty());
  const auto nm = run_clustertwin({"prune", "--model", model, "--out", out, "--nm", "2:4", "--samples", "4"});
  EXPECT_EQ(nm.exit_code, 0) << nm.err;
}

// The shipped checkpoint reads its corpus from packs beside it; a pruned copy written in another folder names
// them relative to its own (issue 49: it named them as the original did, and eval could not find them).
TEST(IgspCliTest, APrunedCheckpointWrittenElsewhereEvaluatesThere) {
  const std::string shipped = std::string(CT_SOURCE_DIR) + "/models/igsp/data/byte_lm.pt";
  const std::string folder = ::testing::TempDir() + "ct_igsp_elsewhere/deeper";
  std::filesystem::create_directories(folder);
  const std::string out = folder + "/p.pt";
  const auto p = run_clustertwin({"prune", "--model", shipped, "--out", out, "--sparsity", "0.5", "--samples", "4",
                                  "--calib", "math"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto e = run_clustertwin({"eval", "--model", out, "--items", "2", "--json"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(e.out).at("scores").size(), 4u);
  const auto m = nlohmann::json::parse(run_clustertwin({"igsp", "manifest", "--model", out}).out);
  const std::string pack = m.at("corpus")[0].at("pack").get<std::string>();
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::path(folder) / pack)) << pack;
}

TEST(IgspCliTest, BadInputIsOneLineAndExitTwo) {
  const std::string model = trained_checkpoint();
  const std::string out = ::testing::TempDir() + "ct_igsp_cli_never.pt";
  auto expect = [](const clustertwin::testing::CommandResult& r, const std::string& line) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "clustertwin: " + line + "\n");
  };
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--sparsity", "1"}),
         "--sparsity 1.000000: must be in [0, 1)");
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--sparsity", "-0.1"}),
         "--sparsity -0.100000: must be in [0, 1)");
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--nm", "4:4"}),
         "--nm '4:4': expected N:M with 1 <= N < M, like 2:4");
  const std::string junk = std::string(CT_TEST_DATA_DIR) + "/traces/valid.json";
  expect(run_clustertwin({"prune", "--model", junk, "--out", out}),
         junk + ": not a clustertwin byte-LM checkpoint: not a torch archive");
  expect(run_clustertwin({"igsp", "manifest", "--model", junk}),
         junk + ": not a clustertwin byte-LM checkpoint: not a torch archive");
  expect(run_clustertwin({"igsp", "relocate", "--model", model}), "relocate: give --general or --code");
  expect(run_clustertwin({"eval", "--model", junk}),
         junk + ": not a clustertwin byte-LM checkpoint: not a torch archive");
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--calib", ""}),
         "--calib: an empty calibration source name");
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--calib", "math+"}),
         "--calib 'math+': an empty calibration source name in the list");
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--calib", "poetry"}),
         "--calib 'poetry': unknown calibration source (allowed: general, code, math, commonsense, several joined "
         "by + or , for their uniform mix, mix, random, selfcal, sgs, igsp, igsp-repeated, igsp-unique)");
  // The library names its arguments' fields ("samples 0", "method 'obs'"); the command line names its flags.
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--samples", "0"}), "--samples 0: must be >= 1");
  expect(run_clustertwin({"prune", "--model", model, "--out", out, "--method", "obs"}),
         "--method 'obs': unknown (allowed: sparsegpt, wanda, magnitude)");
  expect(run_clustertwin({"eval", "--model", model, "--items", "0"}), "--items 0: must be >= 1");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(IgspCliTest, TrainNamesItsFlags) {
  const std::string out = ::testing::TempDir() + "ct_igsp_cli_train_never.pt";
  // train announces itself on stderr before it checks anything: the error is the last line.
  auto expect = [](const std::vector<std::string>& args, const std::string& line) {
    std::vector<std::string> argv = {"igsp", "train"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_clustertwin(argv);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const std::string want = "clustertwin: " + line + "\n";
    EXPECT_TRUE(r.err.size() >= want.size() && r.err.compare(r.err.size() - want.size(), want.size(), want) == 0)
        << r.err;
  };
  expect({"--out", out, "--steps", "0", "--minutes", "0"},
         "--steps 0 --minutes 0.000000: give a positive step count or time limit");
  expect({"--out", out, "--steps", "-1"}, "--steps -1 --minutes 20.000000: give a positive step count or time limit");
  expect({"--out", "", "--steps", "1"}, "--out: give the checkpoint to write");
  expect({"--out", out, "--steps", "1", "--batch", "0"}, "--batch 0: must be >= 1");
  expect({"--out", out, "--steps", "1", "--lr", "0"}, "--lr 0.000000: must be > 0");
  expect({"--out", out, "--steps", "1", "--checkpoint-minutes", "0"}, "--checkpoint-minutes 0.000000: must be > 0");
  expect({"--out", out, "--steps", "1", "--resume"}, "--resume: " + out + ": no such file");
  // The model's own fields are named as the model names them (models/torch/byte_lm_options.h).
  expect({"--out", out, "--steps", "1", "--heads", "3"}, "heads 3 must divide d_model 128");
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace clustertwin::real::igsp
