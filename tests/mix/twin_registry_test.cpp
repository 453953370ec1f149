// The twin interface (sim/core/twin.h) as a program that names no system
// sees it: the registry finds each system of common/systems.def by name,
// and a job run alone through the interface is the system's own twin run.

#include <gtest/gtest.h>

#include <string>

#include "models/cluster/cluster_profile.h"
#include "sim/core/plan_job.h"
#include "sim/core/twin.h"
#include "sim/flexmarl/flexmarl_twin.h"
#include "sim/mix/job_setup.h"

namespace clustertwin::sim {
namespace {

TEST(TwinRegistryTest, FindsEachSystemOfTheRegistryByName) {
  std::string names;
#define CT_SYSTEM(system, title)                     \
  ASSERT_NE(find_twin(#system), nullptr) << #system; \
  EXPECT_EQ(find_twin(#system)->name(), #system);    \
  names += std::string(names.empty() ? "" : ", ") + #system;
#include "common/systems.def"
#undef CT_SYSTEM
  EXPECT_EQ(twin_list(), names);
  EXPECT_EQ(find_twin("astra"), nullptr);
}

// A job's settings from a config mapping: the twin reads its own keys, and
// an absent key takes the twin's default.
std::shared_ptr<const TwinSettings> settings_of(const Twin& twin, const std::string& yaml, const JobFrame& frame) {
  auto node = cluster::parse_config_yaml(yaml, "job.yaml");
  EXPECT_TRUE(node.is_ok()) << node.status().message();
  auto entry = cluster::FieldReader::open("job.yaml", "", *node);
  EXPECT_TRUE(entry.is_ok()) << entry.status().message();
  auto settings = twin.read_settings(*entry, frame);
  EXPECT_TRUE(settings.is_ok()) << settings.status().message();
  EXPECT_TRUE(entry->finish().is_ok()) << entry->finish().message();
  return settings.is_ok() ? *settings : nullptr;
}

// A step plan run alone through the interface is simulate_plan's run of the same plan on the same profile.
TEST(TwinRegistryTest, APlanJobRunAloneIsSimulatePlansRun) {
  auto profile = cluster::load_cluster_profile("h100-1024");
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  profile->costs["mix_compute"] = cluster::CostModel{};
  profile->costs["mix_compute"].latency = 2e-3;
  SimOptions options;
  options.workers = 16;
  auto job = PlanJob::make(mix::data_parallel_plan(int64_t{256} << 20), *profile, options, "data_parallel");
  ASSERT_TRUE(job.is_ok()) << job.status().message();
  auto alone = run_alone(**job, *profile);
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();
  auto direct = simulate_plan(mix::data_parallel_plan(int64_t{256} << 20), *profile, options);
  ASSERT_TRUE(direct.is_ok()) << direct.status().message();
  EXPECT_EQ(alone->step_time_s, direct->step_time_s);
  EXPECT_EQ(alone->step_end_s, direct->step_end_s);
  EXPECT_GT(alone->wall_s, 0);
}

// FlexMARL's job from a mapping, run alone through the interface, is `sim flexmarl`'s run on the same devices.
TEST(TwinRegistryTest, AFlexMarlJobRunAloneIsSimFlexmarlsRun) {
  auto profile = cluster::load_cluster_profile("h100-1024");
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  const Twin& twin = *find_twin("flexmarl");
  JobFrame frame;
  frame.file = "job.yaml";
  frame.field = "job";
  frame.name = "rl";
  frame.workers = 32;
  frame.seed = 9;
  frame.steps = 3;
  auto settings = settings_of(twin, "{framework: marti, decode_efficiency: 0.6}", frame);
  ASSERT_NE(settings, nullptr);
  EXPECT_EQ(twin.batch_per_worker(*settings), 0);
  ASSERT_TRUE(twin.check(*settings, *profile, frame).is_ok());
  auto job = twin.prepare(*settings, *profile, frame);
  ASSERT_TRUE(job.is_ok()) << job.status().message();
  EXPECT_EQ((*job)->runs(), "flexmarl/marti");
  auto alone = run_alone(**job, *profile);
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();

  flexmarl::FlexMarlSetup setup;
  setup.devices = 32;
  setup.steps = 3;
  setup.seed = 9;
  setup.efficiency.decode = 0.6;
  setup.efficiency.sync_decode = 0.6;
  auto row = flexmarl::run_flexmarl(setup, *profile, models::flexmarl::Framework::kMarti);
  ASSERT_TRUE(row.is_ok()) << row.status().message();
  EXPECT_EQ(alone->step_time_s, row->step_s);
  ASSERT_EQ(alone->step_end_s.size(), 3u);
  EXPECT_EQ(alone->step_end_s[2] - alone->step_end_s[1], row->step_times_s[2]);
}

}  // namespace
}  // namespace clustertwin::sim
