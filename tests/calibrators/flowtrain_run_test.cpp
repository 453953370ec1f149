// calibrators/flowtrain/flowtrain_run.cpp (read_flowtrain_run, flowtrain_fit.h): a `run flowtrain --trace`
// run as the FlowTrain process twin's validation reads it, on the run the H200 device check recorded
// (traces/data/h200/flowtrain-2rank-monolithic.json.gz), and a config field it lacks named in one line.
// (tests/real/flowtrain_run_test.cpp is the real executor's test.)

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "calibrators/flowtrain/flowtrain_fit.h"
#include "common/file_io.h"

namespace clustertwin::calibrators {
namespace {

const std::string kShippedRun = std::string(CT_SOURCE_DIR) + "/traces/data/h200/flowtrain-2rank-monolithic.json.gz";

TEST(FlowTrainRunTest, TheShippedRunsOptionsStepsAndModelAreRead) {
  auto run = read_flowtrain_run(kShippedRun);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  const sim::flowtrain::FlowTrainProcessSetup& s = run->setup;
  // Its config: {"mode": "monolithic", "world_size": 2, "steps": 6, "global_batch": 32, ...}.
  EXPECT_EQ(s.mode, "monolithic");
  EXPECT_EQ(s.world, 2);
  EXPECT_EQ(s.steps, 6);
  EXPECT_EQ(s.global_batch, 32);
  EXPECT_EQ(s.micro_batch_tokens, 256);
  EXPECT_EQ(s.gpus, 1);  // hardware "cuda:0 (...)" without config.gpus: the device check's one GPU
  EXPECT_EQ(s.facts.encoder_params, 1843200);
  EXPECT_EQ(s.facts.patch, 4) << "a run from before the config said its patch: the tiny VLM's 4 x 4";
  EXPECT_EQ(run->step_s.size(), 6u);  // rank 0's flowtrain/step events, one a step
  for (double step : run->step_s)
    EXPECT_GT(step, 0);
  EXPECT_NEAR(run->matmul_flops_per_s, 5.06e13, 0.01e13);
}

// A large run's 14 x 14 patches, which its data events' bytes follow (tiny_sample_bytes).
TEST(FlowTrainRunTest, TheModelsPatchIsReadWhereTheConfigHasIt) {
  auto text = read_file(kShippedRun);
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  nlohmann::json trace = nlohmann::json::parse(*text);
  trace["metadata"]["config"]["model"]["patch"] = 14;
  const std::string path = ::testing::TempDir() + "ct_flowtrain_run_patch.json";
  ASSERT_TRUE(write_file_atomically(path, trace.dump()).is_ok());
  auto run = read_flowtrain_run(path);
  ASSERT_TRUE(run.is_ok()) << run.status().message();
  EXPECT_EQ(run->setup.facts.patch, 14);
}

TEST(FlowTrainRunTest, AMissingModelIsOneLineNamingTheField) {
  auto text = read_file(kShippedRun);
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  nlohmann::json trace = nlohmann::json::parse(*text);
  trace["metadata"]["config"].erase("model");
  const std::string path = ::testing::TempDir() + "ct_flowtrain_run_no_model.json";
  ASSERT_TRUE(write_file_atomically(path, trace.dump()).is_ok());
  auto run = read_flowtrain_run(path);
  ASSERT_FALSE(run.is_ok());
  EXPECT_EQ(run.status().message(), path + ": field 'metadata.config.model': missing or not an object");
}

}  // namespace
}  // namespace clustertwin::calibrators
