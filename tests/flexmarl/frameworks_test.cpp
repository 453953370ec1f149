#include "models/flexmarl/frameworks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "models/flexmarl/agents.h"

namespace clustertwin::models::flexmarl {
namespace {

// npu-768's device (sim/platforms/npu-768.yaml).
DeviceFacts npu() {
  return {376e12, 64e9, 1.6e12};
}

TEST(FrameworksTest, NamesRoundTripAndListsParse) {
  for (Framework f : all_frameworks())
    EXPECT_EQ(framework_from_name(framework_name(f)), f);
  auto two = parse_frameworks("sync,flexmarl,sync");
  ASSERT_TRUE(two.is_ok());
  EXPECT_EQ(*two, (std::vector<Framework>{Framework::kSync, Framework::kFlexMarl}));
  EXPECT_EQ(parse_frameworks("all")->size(), 5u);
  auto bad = parse_frameworks("sync,verl");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "--framework 'verl': unknown framework (known: sync, marti, flexmarl, flexmarl-nobalance, "
            "flexmarl-noasync, or all)");
}

TEST(FrameworksTest, PlacementFollowsModelSize) {
  const spec::LlmSpec m14 = *spec::llm_spec("14B"), m32 = *spec::llm_spec("32B");
  // 14B: 29.5 GB of bf16 weights fit half of a 64 GB device; 32B's 65.5 GB need 4 devices (2 leave < half free).
  EXPECT_EQ(inference_tp(m14, 64e9), 1);
  EXPECT_EQ(inference_tp(m32, 64e9), 4);
  // Adam state 16 B/param in 60% of 64 GB: 14B (236 GB) -> 6.1 -> 8 devices; 32B (524 GB) -> 13.7 -> 16.
  EXPECT_EQ(training_group(m14, 64e9), 8);
  EXPECT_EQ(training_group(m32, 64e9), 16);
  // KV: 14B has 48 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 196,608 B per token.
  EXPECT_EQ(m14.kv_bytes_per_token(2), 196608);
  const int slots = decode_slots(m14, 1, 64e9, 5120);
  EXPECT_EQ(slots, static_cast<int>(std::floor((0.9 * 64e9 - weight_bytes(m14)) / (196608.0 * 5120))));
  EXPECT_GE(slots, 20);
}

TEST(FrameworksTest, DecodeIsMemoryBoundAndGrowsWithContext) {
  const spec::LlmSpec m14 = *spec::llm_spec("14B");
  EngineEfficiency e;
  e.decode = 0.5;
  const double empty = decode_iteration_s(m14, 1, npu(), e, 0);
  EXPECT_NEAR(empty, weight_bytes(m14) / (1.6e12 * 0.5), 1e-12);
  const double full = decode_iteration_s(m14, 1, npu(), e, 10000);
  EXPECT_NEAR(full - empty, 10000 * 196608.0 / (1.6e12 * 0.5), 1e-12);
  EXPECT_NEAR(decode_iteration_s(m14, 2, npu(), e, 10000), full / 2, 1e-12);
}

TEST(FrameworksTest, ExpectedResponseMatchesTheSampler) {
  const Workload w = ma_workload();
  const std::vector<double> expected = expected_response_tokens(w);
  std::vector<double> sum(w.agents.size(), 0.0);
  const int steps = 400;
  for (int s = 0; s < steps; ++s) {
    auto lengths = response_lengths(w, 7, s);
    for (size_t a = 0; a < w.agents.size(); ++a)
      sum[a] += std::accumulate(lengths[a].begin(), lengths[a].end(), 0.0);
  }
  for (size_t a = 0; a < w.agents.size(); ++a) {
    // 25,600 draws: the sampler's mean within 2% of the closed form (rounding to whole tokens included).
    EXPECT_NEAR(sum[a] / (steps * w.global_batch), expected[a], 0.02 * expected[a]) << w.agents[a].name;
  }
}

TEST(FrameworksTest, SyncEnginesSpanAllDevices) {
  // Colocated: each agent's engine has an instance on every device (one 14B instance per device), loaded when
  // the agent's phase starts.
  auto d = deploy(ma_workload(), Framework::kSync, 48, npu());
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->instances, (std::vector<int>{48, 48, 48}));
  EXPECT_EQ(d->rollout_devices, 48);
  EXPECT_EQ(d->trainer_groups, 0);
}

TEST(FrameworksTest, DisaggregatedPoolsAndPredictedInstances) {
  const Workload w = ma_workload();
  auto flex = deploy(w, Framework::kFlexMarl, 48, npu());
  ASSERT_TRUE(flex.is_ok());
  // A quarter of 48 is 12: one group of 8 (14B's training group); 40 devices for rollout.
  EXPECT_EQ(flex->trainer_group_devices, 8);
  EXPECT_EQ(flex->trainer_groups, 1);
  EXPECT_EQ(flex->rollout_devices, 40);
  EXPECT_EQ(std::accumulate(flex->instances.begin(), flex->instances.end(), 0), 40);
  // Marketing's longest response is the shortest (its median 1,024 tokens): it gets the fewest instances.
  EXPECT_LT(flex->instances[1], flex->instances[0]);
  EXPECT_LT(flex->instances[1], flex->instances[2]);
  // The longest responses: analysis and after-sales reach the 8,192 cap; marketing's stays below it.
  const std::vector<double> longest = expected_longest_response_tokens(w);
  EXPECT_EQ(longest[0], 8192);
  EXPECT_EQ(longest[2], 8192);
  EXPECT_LT(longest[1], 8192);
  auto equal = deploy(w, Framework::kNoBalance, 48, npu());
  ASSERT_TRUE(equal.is_ok());
  EXPECT_LE(*std::max_element(equal->instances.begin(), equal->instances.end()) -
                *std::min_element(equal->instances.begin(), equal->instances.end()),
            1);
}

TEST(FrameworksTest, MixedSizesFillTheRolloutPool) {
  auto agents = parse_agents("3x32B+7x14B");
  ASSERT_TRUE(agents.is_ok());
  auto d = deploy(workload_for(*agents), Framework::kFlexMarl, 160, npu());
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->trainer_group_devices, 16);  // the 32B agents' need
  EXPECT_EQ(d->trainer_groups, 2);          // 40 / 16
  int used = 0;
  for (size_t a = 0; a < d->instances.size(); ++a) {
    EXPECT_GE(d->instances[a], 1);
    used += d->instances[a] * d->tp[a];
  }
  EXPECT_LE(used, d->rollout_devices);
  EXPECT_GT(used, d->rollout_devices - 4);  // what is left cannot hold another 32B instance
}

TEST(FrameworksTest, TheFirstTurnGetsWhatTheWholeTurnAfterItGets) {
  // 15 x 14B: one agent answers first, fourteen after it. Every sample's chain runs through the first agent,
  // so the plan gives it far more instances than any single agent of the second turn, and within the second
  // turn the agents with the longer responses get more.
  auto agents = parse_agents("15x14B");
  ASSERT_TRUE(agents.is_ok());
  const Workload w = workload_for(*agents);
  auto d = deploy(w, Framework::kFlexMarl, 240, npu());
  ASSERT_TRUE(d.is_ok());
  const int later_max = *std::max_element(d->instances.begin() + 1, d->instances.end());
  EXPECT_GT(d->instances[0], 2 * later_max);
  // Agents 1 and 3 have medians 1,024 and 4,096 tokens (workload_for's cycle).
  EXPECT_LT(d->instances[1], d->instances[3]);
  EXPECT_EQ(std::accumulate(d->instances.begin(), d->instances.end(), 0), d->rollout_devices);
}

TEST(FrameworksTest, TooFewDevicesNamesTheCount) {
  auto d = deploy(ma_workload(), Framework::kFlexMarl, 8, npu());
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().message(),
            "--workers 8: too few for 3 agents (a rollout instance per agent and a training pool of 8 devices)");
  auto s = deploy(ma_workload(), Framework::kSync, 2, npu());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().message(), "--workers 2: too few for 3 agents (agent analysis trains on at least 8 devices)");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
