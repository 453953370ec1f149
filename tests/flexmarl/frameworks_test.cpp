#include "models/flexmarl/frameworks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "models/flexmarl/agents.h"

namespace clustertwin::models::flexmarl {
namespace {

// npu-768's device (sim/platforms/npu-768.yaml): 1.5 us between two devices of a 16-device node.
DeviceFacts npu() {
  DeviceFacts d;
  d.peak_flops = 376e12;
  d.memory_bytes = 64e9;
  d.memory_bandwidth = 1.6e12;
  d.link_latency_s = 1.5e-6;
  d.devices_per_node = 16;
  return d;
}

// The engines at a decode efficiency of 0.7 (the twin's callers take a device profile's).
EngineEfficiency engines() {
  EngineEfficiency e;
  e.decode = 0.7;
  return e;
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
            "framework 'verl': unknown framework (known: sync, marti, flexmarl, flexmarl-nobalance, "
            "flexmarl-noasync, or all)");
}

TEST(FrameworksTest, PlacementFollowsModelSize) {
  const spec::LlmSpec m14 = *spec::llm_spec("14B"), m32 = *spec::llm_spec("32B");
  // Memory alone (a one-device node): 14B's 29.5 GB of bf16 weights fit half of a 64 GB device; 32B's 65.5 GB
  // need 4 devices (2 leave < half free).
  DeviceFacts alone = npu();
  alone.devices_per_node = 1;
  EXPECT_EQ(inference_tp(m14, alone), 1);
  EXPECT_EQ(inference_tp(m32, alone), 4);
  // In a node the token is fastest where reading 1/tp of the weights stops paying for the exchanges: 14B (48
  // layers) at tp 8: 29.5 GB / 8 / 1.6 TB/s = 2.30 ms + 2 x 48 x 14 x 1.5 us = 2.02 ms, against 4.61 + 0.86 at 4
  // and 1.15 + 4.32 at 16.
  EXPECT_EQ(inference_tp(m14, npu()), 8);
  EXPECT_EQ(inference_tp(m32, npu()), 8);
  EXPECT_NEAR(tp_exchange_s(m14, 8, npu()), 2 * 48 * 2 * 7 * 1.5e-6, 1e-15);
  EXPECT_EQ(tp_exchange_s(m14, 1, npu()), 0);
  // Free exchanges: the whole node.
  DeviceFacts free_links = npu();
  free_links.link_latency_s = 0;
  EXPECT_EQ(inference_tp(m14, free_links), 16);
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
  EXPECT_NEAR(decode_iteration_s(m14, 2, npu(), e, 10000), full / 2 + tp_exchange_s(m14, 2, npu()), 1e-12);
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
  // Colocated: each agent's engine has instances over every device (one 14B instance per 8 devices), loaded
  // when the agent's phase starts.
  auto d = deploy(ma_workload(), Framework::kSync, 48, npu(), engines());
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->instances, (std::vector<int>{6, 6, 6}));
  EXPECT_EQ(d->rollout_devices, 48);
  EXPECT_EQ(d->trainer_groups, 0);
}

TEST(FrameworksTest, DisaggregatedPoolsAndPredictedInstances) {
  const Workload w = ma_workload();
  auto flex = deploy(w, Framework::kFlexMarl, 48, npu(), engines());
  ASSERT_TRUE(flex.is_ok());
  // Groups of 8 (14B's training group); the rest of the 48 devices roll out, an instance per 8.
  EXPECT_EQ(flex->trainer_group_devices, 8);
  EXPECT_GE(flex->trainer_groups, 1);
  EXPECT_EQ(flex->rollout_devices, 48 - 8 * flex->trainer_groups);
  EXPECT_EQ(8 * std::accumulate(flex->instances.begin(), flex->instances.end(), 0), flex->rollout_devices);
  // Marketing's longest response is the shortest (its median 1,024 tokens): it never gets more than the others.
  EXPECT_LE(flex->instances[1], flex->instances[0]);
  EXPECT_LE(flex->instances[1], flex->instances[2]);
  // The longest responses: analysis and after-sales reach the 8,192 cap; marketing's stays below it.
  const std::vector<double> longest = expected_longest_response_tokens(w);
  EXPECT_EQ(longest[0], 8192);
  EXPECT_EQ(longest[2], 8192);
  EXPECT_LT(longest[1], 8192);
  // The ablations keep flexmarl's pools; nobalance splits its rollout pool equally.
  auto equal = deploy(w, Framework::kNoBalance, 48, npu(), engines());
  ASSERT_TRUE(equal.is_ok());
  EXPECT_EQ(equal->trainer_groups, flex->trainer_groups);
  EXPECT_LE(*std::max_element(equal->instances.begin(), equal->instances.end()) -
                *std::min_element(equal->instances.begin(), equal->instances.end()),
            1);
  // marti: a group of 8 per agent (24 devices), the other 24 roll out, an instance each; on 32 devices only
  // one group fits beside an instance per agent, and the agents take it in turn.
  auto marti = deploy(w, Framework::kMarti, 48, npu(), engines());
  ASSERT_TRUE(marti.is_ok());
  EXPECT_EQ(marti->trainer_groups, 3);
  EXPECT_EQ(marti->rollout_devices, 24);
  EXPECT_EQ(marti->instances, (std::vector<int>{1, 1, 1}));
  auto few = deploy(w, Framework::kMarti, 32, npu(), engines());
  ASSERT_TRUE(few.is_ok());
  EXPECT_EQ(few->trainer_groups, 1);
}

TEST(FrameworksTest, SlowerTrainingTakesALargerTrainingPool) {
  // FlexMARL sizes its training pool against the predicted rollout: the dearer a batch's training, the more
  // groups, and never all of them while the rollout still needs devices.
  const Workload w = ma_workload();
  int previous = 0;
  // The trainer's kernels slower and slower (its GEMMs and attention at a falling share of peak).
  for (double share : {0.9, 0.5, 0.2, 0.1, 0.05, 0.02}) {
    DeviceFacts device = npu();
    device.gemm_efficiency = share;
    device.attention_efficiency = share;
    auto d = deploy(w, Framework::kFlexMarl, 96, device, engines());
    ASSERT_TRUE(d.is_ok());
    EXPECT_GE(d->trainer_groups, previous) << "GEMM and attention efficiency " << share;
    previous = d->trainer_groups;
  }
  DeviceFacts fast = npu(), slow = npu();
  fast.gemm_efficiency = fast.attention_efficiency = 0.9;
  slow.gemm_efficiency = slow.attention_efficiency = 0.02;
  EXPECT_GT(deploy(w, Framework::kFlexMarl, 96, slow, engines())->trainer_groups,
            deploy(w, Framework::kFlexMarl, 96, fast, engines())->trainer_groups);
}

// The trainer prices a sample through the transformer model: the policy's forward and backward and the old and
// reference policies' forwards of one sequence, the layers and the LM head as the LLM twin prices them.
TEST(FrameworksTest, ASampleTrainsAtTheTransformerModelsCost) {
  const spec::LlmSpec m = *spec::llm_spec("7B");
  const DeviceFacts d = npu();
  transformer::Transformer t = transformer::from_llm_spec(m);
  t.seq = 300 + 1700;
  const transformer::PassSeconds layers = transformer::layer_seconds(t, t.layers, 2000, 1, false, d);
  const transformer::PassSeconds head = transformer::head_seconds(t, 2000, 1, d);
  const double expected = 3 * (layers.forward + head.forward) + layers.backward + head.backward;
  EXPECT_FALSE(trains_with_recomputation(m, 2000, d.memory_bytes));  // 34 x 2000 x 3584 x 28 B = 6.8 GB of 25.6
  EXPECT_NEAR(sample_train_s(m, 300, 1700, d), expected, 1e-12 * expected);
  // Past the activations' share of memory (25.6 GB: 7,500 tokens), one more forward: the recomputation.
  EXPECT_FALSE(trains_with_recomputation(m, 7400, d.memory_bytes));
  EXPECT_TRUE(trains_with_recomputation(m, 7600, d.memory_bytes));
  t.seq = 7600;
  const transformer::PassSeconds long_layers = transformer::layer_seconds(t, t.layers, 7600, 1, false, d);
  const transformer::PassSeconds long_head = transformer::head_seconds(t, 7600, 1, d);
  const double recomputing = 4 * (long_layers.forward + long_head.forward) + long_layers.backward + long_head.backward;
  EXPECT_NEAR(sample_train_s(m, 600, 7000, d), recomputing, 1e-12 * recomputing);
  EXPECT_DOUBLE_EQ(train_s(8.0, 4), 2.0);  // ZeRO-3: the samples split over the group
  EXPECT_NEAR(optimizer_s(m, 8, d), static_cast<double>(m.params()) / 8 * transformer::kAdamBytesPerParameter / 1.6e12,
              1e-15);
}

TEST(FrameworksTest, MixedSizesFillTheRolloutPool) {
  auto agents = parse_agents("3x32B+7x14B");
  ASSERT_TRUE(agents.is_ok());
  auto d = deploy(workload_for(*agents), Framework::kFlexMarl, 160, npu(), engines());
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->trainer_group_devices, 16);  // the 32B agents' need
  EXPECT_GE(d->trainer_groups, 1);
  int used = 0;
  for (size_t a = 0; a < d->instances.size(); ++a) {
    EXPECT_GE(d->instances[a], 1);
    used += d->instances[a] * d->tp[a];
  }
  EXPECT_LE(used, d->rollout_devices);
  EXPECT_GT(used, d->rollout_devices - 8);  // what is left cannot hold another instance (8 devices each)
}

TEST(FrameworksTest, TheFirstTurnGetsWhatTheWholeTurnAfterItGets) {
  // 15 x 14B: one agent answers first, fourteen after it. Every sample's chain runs through the first agent,
  // so the plan gives it far more instances than any single agent of the second turn, and within the second
  // turn the agents with the longer responses get more.
  auto agents = parse_agents("15x14B");
  ASSERT_TRUE(agents.is_ok());
  const Workload w = workload_for(*agents);
  auto d = deploy(w, Framework::kFlexMarl, 960, npu(), engines());  // 8-device instances: room for several each
  ASSERT_TRUE(d.is_ok());
  const int later_max = *std::max_element(d->instances.begin() + 1, d->instances.end());
  EXPECT_GE(d->instances[0], 2 * later_max);
  // Agents 1 and 3 have medians 1,024 and 4,096 tokens (workload_for's cycle).
  EXPECT_LT(d->instances[1], d->instances[3]);
  EXPECT_EQ(8 * std::accumulate(d->instances.begin(), d->instances.end(), 0), d->rollout_devices);
}

TEST(FrameworksTest, TooFewDevicesNamesTheCount) {
  auto d = deploy(ma_workload(), Framework::kFlexMarl, 8, npu(), engines());
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().message(),
            "workers 8: too few for 3 agents (a rollout instance per agent and a training pool of 8 devices)");
  auto s = deploy(ma_workload(), Framework::kSync, 2, npu(), engines());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().message(), "workers 2: too few for 3 agents (agent analysis needs 8 per rollout instance)");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
