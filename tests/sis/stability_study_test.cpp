// The stability study on a small grid: GRPO learns the task, SIS changes
// nothing when rollouts are on-policy (every token accepted), and the output
// is deterministic.

#include "real/sis/stability_study.h"

#include <gtest/gtest.h>

namespace clustertwin::real::sis {
namespace {

StabilityOptions small() {
  StabilityOptions o;
  o.lags = {0, 3};
  o.conditions = {"grpo", "grpo+sis"};
  o.seeds = 2;
  o.steps = 40;
  o.engine_noise = 0;
  o.length = 16;
  o.vocab = 8;
  o.states = 5;
  o.lr = 0.1;
  return o;
}

TEST(StabilityStudyTest, OnPolicySisAcceptsEverythingAndChangesNothing) {
  auto s = run_stability_study(small());
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->runs.size(), 2u * 2u * 2u);
  // Lag 0, no engine noise, one epoch: pi_theta = pi_old at the update, every ratio is 1.
  for (int seed = 0; seed < 2; ++seed) {
    const StabilityRun &grpo = s->runs[static_cast<size_t>(seed)], &sis = s->runs[2 + static_cast<size_t>(seed)];
    ASSERT_EQ(grpo.condition, "grpo");
    ASSERT_EQ(sis.condition, "grpo+sis");
    EXPECT_EQ(grpo.success, sis.success);
    EXPECT_DOUBLE_EQ(sis.acceptance, 1.0);
    // GRPO learns: J (exact) rises well above its start (about 1/8, one token in 8 is the one asked for).
    EXPECT_GT(grpo.j.back(), grpo.j.front() + 0.2);
  }
  // Stale rollouts: SIS rejects some tokens and the runs part.
  const StabilityRun& stale_sis = s->runs[6];
  ASSERT_EQ(stale_sis.lag, 3);
  ASSERT_EQ(stale_sis.condition, "grpo+sis");
  EXPECT_LT(stale_sis.acceptance, 1.0);
  EXPECT_NE(stale_sis.success, s->runs[4].success);
}

TEST(StabilityStudyTest, SameOptionsSameBytes) {
  StabilityOptions o = small();
  o.steps = 10;
  o.engine_noise = 0.5;
  EXPECT_EQ(stability_curves_csv(*run_stability_study(o)), stability_curves_csv(*run_stability_study(o)));
}

TEST(StabilityStudyTest, OneSeedHasNoInterval) {
  StabilityOptions o = small();
  o.lags = {0};
  o.conditions = {"grpo"};
  o.steps = 10;
  o.seeds = 1;
  auto s = run_stability_study(o);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  const nlohmann::json j = stability_json(*s);
  ASSERT_EQ(j.at("summary").size(), 1u);
  EXPECT_TRUE(j["summary"][0].at("final_success").is_number());
  EXPECT_TRUE(j["summary"][0].at("final_success_ci95")[0].is_null()) << j["summary"][0];
  EXPECT_NE(stability_table(*s).find("[  one seed  ]"), std::string::npos) << stability_table(*s);
  // Two seeds do have one.
  o.seeds = 2;
  s = run_stability_study(o);
  ASSERT_TRUE(s.is_ok());
  EXPECT_TRUE(stability_json(*s)["summary"][0].at("final_success_ci95")[0].is_number());
}

TEST(StabilityStudyTest, BadOptionsNameTheFlag) {
  StabilityOptions o;
  o.conditions = {"ppo"};
  EXPECT_EQ(validate(o).message(), "conditions 'ppo': unknown (allowed: grpo, grpo+sis, grpo+sis-engine)");
  o = {};
  o.lags = {-1};
  EXPECT_EQ(validate(o).message(), "lags -1 is outside [0, 64]");
  o = {};
  o.group = 1;
  EXPECT_EQ(validate(o).message(), "group 1 must be >= 2 (advantages need a group)");
}

}  // namespace
}  // namespace clustertwin::real::sis
