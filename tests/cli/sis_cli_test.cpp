// `clustertwin sis study|stability` as a user runs them: a tiny grid end to
// end (JSON on stdout, the files in --out), and bad flags as one line with
// exit code 2.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::run_clustertwin;

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/ct_sis_cli_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(SisCliTest, StudyPrintsJsonAndWritesItsFiles) {
  const std::string out = fresh_dir("study");
  const auto r = run_clustertwin(
      {"sis", "study", "--lengths", "4,8", "--drifts", "0.3", "--replicates", "20", "--json", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows"].size(), 2u * 10u);  // 2 lengths x 1 drift x 10 estimators
  EXPECT_EQ(j["options"]["replicates"], 20);
  EXPECT_TRUE(std::filesystem::exists(out + "/estimators.csv"));
  EXPECT_TRUE(std::filesystem::exists(out + "/estimators.json"));
}

TEST(SisCliTest, StabilityPrintsJsonAndWritesItsFiles) {
  const std::string out = fresh_dir("stability");
  const auto r = run_clustertwin(
      {"sis", "stability", "--lags", "0,2", "--seeds", "1", "--steps", "4", "--length", "8", "--json", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"].size(), 2u * 3u);  // 2 lags x 3 conditions
  EXPECT_TRUE(std::filesystem::exists(out + "/stability_curves.csv"));
  EXPECT_TRUE(std::filesystem::exists(out + "/stability_summary.csv"));
}

struct BadFlag {
  std::vector<std::string> args;
  const char* line;
};

class SisBadFlagTest : public ::testing::TestWithParam<BadFlag> {};

TEST_P(SisBadFlagTest, ExitsTwoWithOneLine) {
  std::vector<std::string> args = GetParam().args;
  args.push_back("--out");
  args.push_back(fresh_dir("bad"));
  const auto r = run_clustertwin(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, std::string("clustertwin: ") + GetParam().line + "\n");
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SisBadFlagTest,
    ::testing::Values(
        BadFlag{{"sis", "study", "--lengths", "4,x"}, "sis study: --lengths 'x' is not an integer"},
        BadFlag{{"sis", "study", "--drifts", "0.1,"}, "sis study: --drifts '' is not a number"},
        BadFlag{{"sis", "study", "--top-k", "9"}, "sis study: --top-k 9 is outside [1, 8] (the vocabulary)"},
        BadFlag{{"sis", "stability", "--conditions", "grpo,ppo"},
                "sis stability: --conditions 'ppo': unknown (allowed: grpo, grpo+sis, grpo+sis-engine)"},
        BadFlag{{"sis", "stability", "--lags", "0,-2"}, "sis stability: --lags -2 is outside [0, 64]"},
        // A given value is checked, never replaced by the default.
        BadFlag{{"sis", "study", "--replicates", "0"}, "sis study: --replicates 0 must be >= 2"},
        BadFlag{{"sis", "study", "--batch", "4096", "--lengths", "4096"},
                "sis study: --batch 4096 x the longest of lengths 4096 is more than 1,048,576 tokens "
                "per batch"},
        BadFlag{{"sis", "stability", "--lr", "0"}, "sis stability: --lr 0 must be > 0"},
        BadFlag{{"sis", "stability", "--engine-noise", "-1"}, "sis stability: --engine-noise -1 must be >= 0"}));

}  // namespace
}  // namespace clustertwin
