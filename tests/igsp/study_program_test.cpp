// ct_igsp_study, the IGSP study's program: bad flags are one line and exit 2;
// on the shipped checkpoint a small study writes every table, and its JSON is
// the same byte for byte with one worker or two. The checkpoint's corpus is
// the repository's packs, so this runs on any machine.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/run_command.h"

namespace {

using clustertwin::testing::run_command;

const std::string kStudy = CT_IGSP_STUDY_PATH;
const std::string kShipped = std::string(CT_SOURCE_DIR) + "/models/igsp/data/byte_lm.pt";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(IgspStudyProgramTest, BadFlagsAreOneLineAndExitTwo) {
  auto expect = [](const std::vector<std::string>& args, const std::string& line) {
    std::vector<std::string> argv = {kStudy};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_command(argv);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "igsp_study: " + line + "\n");
  };
  const std::string out = ::testing::TempDir() + "ct_igsp_study_bad";
  expect({"--out", out, "--seeds", "0"}, "--seeds 0: must be >= 1");
  expect({"--out", out, "--sparsity", "1"}, "--sparsity 1.000000: must be in [0, 1)");
  // The study names its options' fields (eval_items, eval_windows); the program names its flags.
  expect({"--out", out, "--items", "0"}, "--items 0: must be >= 1");
  expect({"--out", out, "--windows", "0"}, "--windows 0: must be >= 1");
  expect({"--out", out, "--jobs", "0"}, "--jobs 0: must be >= 1");
  expect({"--out", out, "--samples", "0"}, "--samples 0: must be >= 1");
  expect({"--out", out, "--method", "obs"}, "--method 'obs': unknown (allowed: sparsegpt, wanda, magnitude)");
  const std::string junk = std::string(CT_TEST_DATA_DIR) + "/traces/valid.json";
  expect({"--out", out, "--model", junk}, junk + ": not a clustertwin byte-LM checkpoint: not a torch archive");
  const auto r = run_command({kStudy, "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(IgspStudyProgramTest, SmallStudyOnTheShippedCheckpointIsDeterministic) {
  ASSERT_TRUE(std::filesystem::exists(kShipped)) << kShipped;
  std::vector<std::string> json;
  for (const char* jobs : {"1", "2"}) {
    const std::string out = ::testing::TempDir() + "ct_igsp_study_small_" + jobs;
    std::filesystem::remove_all(out);
    const auto r =
        run_command({kStudy, "--out", out, "--sets", "general,code,math,random,general+code+math+commonsense",
                     "--seeds", "1", "--samples", "16", "--items", "40", "--windows", "8", "--jobs", jobs});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* file : {"runs.csv", "retention.csv", "metrics.csv", "rho.csv", "study.json"})
      EXPECT_TRUE(std::filesystem::exists(out + "/" + file)) << file;
    EXPECT_NE(r.out.find("Retention (%) after sparsegpt at 60% sparsity"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Spearman's rho over the 4 sources"), std::string::npos) << r.out;
    json.push_back(slurp(out + "/study.json"));
  }
  EXPECT_EQ(json[0], json[1]);
  const auto j = nlohmann::json::parse(json[0]);
  ASSERT_EQ(j.at("sets").size(), 5u);
  EXPECT_EQ(j.at("sets")[3].at("kind"), "control");
  EXPECT_EQ(j.at("samples"), 16);  // the run's sizes are recorded with its results
  EXPECT_EQ(j.at("items"), 40);
  EXPECT_EQ(j.at("windows"), 8);
  // One seed gives a mean but no interval: null, not a zero-width one.
  const auto& total = j.at("sets")[0].at("retention").at("total");
  EXPECT_TRUE(total.at("mean").is_number());
  EXPECT_TRUE(total.at("low").is_null()) << total;
  EXPECT_TRUE(total.at("high").is_null()) << total;
  ASSERT_FALSE(j.at("comparisons").empty());
  for (const auto& c : j.at("comparisons")) {
    EXPECT_TRUE(c.at("difference").is_number()) << c;
    EXPECT_TRUE(c.at("low").is_null()) << c;
  }
  // 7 metrics x 5 dimensions; volume and mean length are constant at equal budgets.
  ASSERT_EQ(j.at("rho").size(), 35u);
  for (const auto& c : j.at("rho")) {
    if (c.at("metric") == "volume" || c.at("metric") == "mean_length") {
      EXPECT_FALSE(c.at("defined").get<bool>()) << c.at("metric");
    }
  }
}

// Fewer than 3 sources leave Spearman's rho undefined: the study says so instead of reading past its table
// (it crashed with one set).
TEST(IgspStudyProgramTest, OneSourceSaysRhoIsNotComputed) {
  const std::string out = ::testing::TempDir() + "ct_igsp_study_one";
  std::filesystem::remove_all(out);
  const auto r = run_command({kStudy, "--out", out, "--sets", "general", "--seeds", "1", "--samples", "16", "--items",
                              "40", "--windows", "8", "--jobs", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(not computed: it needs 3 to 16 calibration sources of kind 'source', and --sets gave 1)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(nlohmann::json::parse(slurp(out + "/study.json")).at("rho").empty());
}

}  // namespace
