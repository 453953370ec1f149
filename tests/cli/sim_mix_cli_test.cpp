// `clustertwin sim mix` as a user runs it: the example mix's table and JSON,
// the same bytes twice, and one line with exit code 2 for bad mix files.

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/gnuplot.h"
#include "tests/cli/run_command.h"

namespace clustertwin {
namespace {

using testing::expect_one_line_exit_2;
using testing::run_clustertwin;
using testing::write_temp;

const std::string kMixes = std::string(CT_SOURCE_DIR) + "/sim/examples/mixes/";

TEST(SimMixCliTest, TheExampleMixPrintsSlowdownsAndContendedLinks) {
  const auto r = run_clustertwin({"sim", "mix", kMixes + "three-jobs.yaml", "--placement", "spread"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("placement spread"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slowdown"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("links carrying several jobs' traffic"), std::string::npos) << r.out;
}

TEST(SimMixCliTest, JsonIsTheSameBytesForTheSameSeed) {
  const std::vector<std::string> args = {"sim", "mix",   kMixes + "three-jobs.yaml", "--placement", "random", "--seed",
                                         "5",   "--json"};
  const auto first = run_clustertwin(args);
  const auto second = run_clustertwin(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  EXPECT_NE(first.out.find("\"placement\":\"random\",\"seed\":5"), std::string::npos) << first.out;
}

// A FlowTrain job beside a data-parallel one, spread over the rail leaves: the table names FlowTrain's mode, and the
// JSON is the same bytes twice (FlowTrain's scheduler decides at run time, from the simulation's own events).
TEST(SimMixCliTest, AFlowTrainJobRunsBesideAnotherAndTheSameSeedGivesTheSameBytes) {
  const std::string mix = write_temp("flowtrain_mix.yaml", R"(profile: h100-1024
jobs:
  - {name: vlm, workers: 16, system: flowtrain, model: 300M+7B, encoder_workers: 4, global_batch: 64}
  - {name: ddp, workers: 32, steps: 20, data_parallel: {compute: 5ms, allreduce_bytes: 1GiB}}
)");  // spread: vlm on nodes 0 and 32, ddp on 1, 33, 64 and 96: both cross the uplinks of leaves 0 and 1
  const auto table = run_clustertwin({"sim", "mix", mix, "--placement", "spread"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("flowtrain/flowtrain"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("links carrying several jobs' traffic"), std::string::npos) << table.out;
  const auto first = run_clustertwin({"sim", "mix", mix, "--placement", "spread", "--json"});
  const auto second = run_clustertwin({"sim", "mix", mix, "--placement", "spread", "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
}

// A FlexMARL job beside a NestPipe one (the shipped example), each through its twin's entry in the registry: packed
// in rail leaf 0, the FlexMARL job takes exactly the step `sim flexmarl` takes on the first 32 devices with the same
// settings, seed and steps (and sync's engine at the others' efficiency, as a mix has no paper fit).
TEST(SimMixCliTest, AFlexMarlJobBesideANestPipeJobTakesSimFlexmarlsStep) {
  const auto mix = run_clustertwin({"sim", "mix", kMixes + "h100-1024-flexmarl-nestpipe.yaml", "--json"});
  ASSERT_EQ(mix.exit_code, 0) << mix.err;
  const auto alone = run_clustertwin({"sim", "flexmarl", "--platform", "h100-1024", "--workers", "32", "--framework",
                                      "flexmarl", "--steps", "3", "--seed", "5", "--calibration", "none", "--json"});
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const nlohmann::json jobs = nlohmann::json::parse(mix.out).at("jobs");
  ASSERT_EQ(jobs.size(), 2u) << mix.out;
  EXPECT_EQ(jobs[0].at("runs"), "flexmarl/flexmarl");
  EXPECT_EQ(jobs[1].at("runs"), "nestpipe/nestpipe");
  const double step_s = nlohmann::json::parse(alone.out).at("rows")[0].at("step_s");
  EXPECT_EQ(jobs[0].at("alone").at("step_time_s").get<double>(), step_s) << mix.out << alone.out;
  EXPECT_EQ(jobs[0].at("mix").at("step_time_s").get<double>(), step_s) << mix.out << alone.out;
}

TEST(SimMixCliTest, PlotDrawsSlowdownsPerPlacementAndGoodput) {
  if (!gnuplot_installed()) GTEST_SKIP() << "gnuplot is not installed";
  const std::string png = ::testing::TempDir() + "ct_sim_mix_plot.png";
  std::remove(png.c_str());
  const std::string mix = write_temp("plot_mix.yaml", "profile: " + kMixes + R"(two-pods-3to1.yaml
failures: {node_mtbf: 500h, horizon: 365d}
jobs:
  - {name: a, workers: 16, data_parallel: {compute: 5ms, allreduce_bytes: 256MiB}, checkpoint: {every: [10min, 1h], cost: 20s, restart: 2min}}
  - {name: b, workers: 16, data_parallel: {compute: 5ms, allreduce_bytes: 256MiB}}
)");
  const auto r = run_clustertwin({"sim", "mix", mix, "--plot", png});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# plot: " + png), std::string::npos) << r.out;
  std::ifstream in(png, std::ios::binary);
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
}

TEST(SimMixCliTest, BadMixFilesExit2WithOneLine) {
  const std::string profile = kMixes + "two-pods-3to1.yaml";
  struct Case {
    std::string yaml;
    std::string part;
  } cases[] = {
      {"profile: " + profile + "\njobs: [{name: a, workers: 8, system: astra}]\n",
       "bad_mix.yaml: field 'jobs[0].system': 'astra': unknown system"},
      {"profile: " + profile + "\njobs: [{name: a, workers: 128, plan: p.json}]\n",
       "bad_mix.yaml: field 'jobs[0].workers': 128 is more workers than profile 'two-pods-3to1' has (64 devices)"},
      {"profile: " + profile +
           "\njobs: [{name: a, workers: 8, nodes: [2], plan: p.json}, {name: b, workers: 8, nodes: [2], plan: "
           "p.json}]\n",
       "bad_mix.yaml: field 'jobs[1].nodes': node 2 is also job 'a''s"},
      {"profile: " + profile + "\njobs: [{name: a, workers: 8, data_parallel: {compute: -2ms, allreduce_bytes: 1}}]\n",
       "bad_mix.yaml: field 'jobs[0].data_parallel.compute'"},
      {"profile: " + profile + "\njobs: [{name: a, workers: 8, colour: red, plan: p.json}]\n",
       "bad_mix.yaml: field 'jobs[0].colour'"},
      {"profile: " + profile + "\nfailures: {node_mtbf: -100h}\njobs: [{name: a, workers: 8, plan: p.json}]\n",
       "bad_mix.yaml: field 'failures.node_mtbf': -100h must be > 0"},
      {"profile: no-such-profile\njobs: [{name: a, workers: 8, plan: p.json}]\n", "bad_mix.yaml: field 'profile'"},
      {"profile: h100-1024\njobs: [{name: a, workers: 16, system: flowtrain, pool_size: 8GB}]\n",
       "bad_mix.yaml: field 'jobs[0].pool_size'"},
      {"profile: h100-1024\njobs: [{name: a, workers: 16, system: flowtrain, model: 300M+7B, encoder_workers: 16}]\n",
       "bad_mix.yaml: field 'jobs[0].encoder_workers': 16 of 16 workers: each side needs at least one worker (1..15)"},
      {"profile: h100-1024\njobs: [{name: a, workers: 8, system: flowtrain, model: 6B+72B}]\n",
       "bad_mix.yaml: field 'jobs[0].model': 6B+72B: allocator: no split of 8 workers fits 6B+72B"},
  };
  for (const Case& c : cases) {
    const auto r = run_clustertwin({"sim", "mix", write_temp("bad_mix.yaml", c.yaml)});
    expect_one_line_exit_2(r, c.part);
  }
}

// One bad value through the command line and through a mix file: the twin's library names the setting's field
// and value once, and each caller says it in its own words: the flag that set it, or the file and the field
// (issue 46: libraries speak their fields, cli/ maps them to flags).
TEST(SimMixCliTest, ABadSettingSpeaksItsCallersWords) {
  struct Case {
    std::vector<std::string> flags;  // `clustertwin sim SYSTEM ...`
    std::string job;                 // the same setting as a mix job
    std::string flag_words, file_words, why;
  } cases[] = {
      {{"sim", "flowtrain", "--workers", "16", "--model", "300M+7B", "--pool-memory", "1MB"},
       "{name: a, workers: 16, system: flowtrain, model: 300M+7B, pool_memory: 1MB}",
       "--pool-memory 1 MB: ",
       "field 'jobs[0].pool_memory': 1 MB: ",
       "smaller than one sample"},
      {{"sim", "flexmarl", "--platform", "h100-1024", "--workers", "32", "--calibration", "none", "--framework",
        "marti", "--agents", "3x13B"},
       "{name: a, workers: 32, system: flexmarl, framework: marti, agents: 3x13B}",
       "--agents '3x13B': ",
       "field 'jobs[0].agents': '3x13B': ",
       "unknown model size '13B'"},
  };
  for (const Case& c : cases) {
    const auto cli = run_clustertwin(c.flags);
    expect_one_line_exit_2(cli, c.flag_words + c.why);
    EXPECT_EQ(cli.err.find("field '"), std::string::npos) << cli.err;
    const auto mix =
        run_clustertwin({"sim", "mix", write_temp("setting_mix.yaml", "profile: h100-1024\njobs: [" + c.job + "]\n")});
    expect_one_line_exit_2(mix, "setting_mix.yaml: " + c.file_words + c.why);
    EXPECT_EQ(mix.err.find(" --"), std::string::npos) << mix.err;
  }
}

}  // namespace
}  // namespace clustertwin
