// The LLM twin through the twin interface (sim/core/twin.h): a job's model
// and split from a config mapping, dp from the job's workers, run alone, is
// `sim llm`'s run of the same setup; a bad key names its field.

#include <gtest/gtest.h>

#include "models/cluster/field_reader.h"
#include "sim/core/twin.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::sim::llm {
namespace {

StatusOr<std::shared_ptr<const TwinSettings>> read(const Twin& twin, const std::string& yaml, const JobFrame& frame) {
  auto node = cluster::parse_config_yaml(yaml, "job.yaml");
  EXPECT_TRUE(node.is_ok()) << node.status().message();
  auto entry = cluster::FieldReader::open("job.yaml", "job", *node);
  EXPECT_TRUE(entry.is_ok()) << entry.status().message();
  auto settings = twin.read_settings(*entry, frame);
  if (settings.is_ok()) {
    EXPECT_TRUE(entry->finish().is_ok()) << entry->finish().message();
  }
  return settings;
}

TEST(LlmEntryTest, AJobFromAMappingRunAloneIsSimLlmsRun) {
  auto profile = cluster::load_cluster_profile("h100-1024");
  ASSERT_TRUE(profile.is_ok());
  const Twin* twin = find_twin("llm");
  ASSERT_NE(twin, nullptr);
  JobFrame frame;
  frame.file = "job.yaml";
  frame.field = "job";
  frame.name = "gpt";
  frame.workers = 32;
  auto settings = read(*twin,
                       "{tp: 8, pp: 2, micro_batch: 1, global_batch: 16, hidden: 1024, heads: 16, layers: 8, "
                       "seq: 1024, schedule: gpipe, recompute: none, zero: 1}",
                       frame);
  ASSERT_TRUE(settings.is_ok()) << settings.status().message();
  EXPECT_EQ(twin->batch_per_worker(**settings), 0);
  ASSERT_TRUE(twin->check(**settings, *profile, frame).is_ok());
  auto job = twin->prepare(**settings, *profile, frame);
  ASSERT_TRUE(job.is_ok()) << job.status().message();
  EXPECT_EQ((*job)->runs(), "llm/gpipe");
  auto alone = run_alone(**job, *profile);
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();

  LlmSetup setup;
  setup.model = models::transformer::Transformer{1024, 16, 0, 0, 8, 1024, 51200, false};
  setup.split.tp = 8;
  setup.split.pp = 2;
  setup.split.dp = 2;  // 32 workers / (8 x 2)
  setup.split.global_batch = 16;
  setup.split.schedule = models::llm::Schedule::kGpipe;
  setup.split.recompute = models::llm::Recompute::kNone;
  setup.split.zero = 1;
  auto direct = simulate_llm(setup, *profile, llm_sim_options(32));
  ASSERT_TRUE(direct.is_ok()) << direct.status().message();
  EXPECT_EQ(alone->step_time_s, direct->step_s);
}

TEST(LlmEntryTest, BadSettingsNameTheField) {
  auto profile = cluster::load_cluster_profile("h100-1024");
  ASSERT_TRUE(profile.is_ok());
  const Twin& twin = *find_twin("llm");
  JobFrame frame;
  frame.file = "job.yaml";
  frame.field = "jobs[0]";
  frame.name = "gpt";
  frame.workers = 24;
  EXPECT_EQ(read(twin, "{schedule: zigzag}", frame).status().message(),
            "job.yaml: field 'job.schedule': 'zigzag': unknown (allowed: 1f1b, interleaved, gpipe)");
  auto settings = read(twin, "{tp: 8, pp: 2}", frame);
  ASSERT_TRUE(settings.is_ok());
  EXPECT_EQ(twin.check(**settings, *profile, frame).message(),
            "job.yaml: field 'jobs[0].tp': 8 x pp 2 does not divide the job's 24 workers");
}

}  // namespace
}  // namespace clustertwin::sim::llm
