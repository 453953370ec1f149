// The LLM twin (sim/llm/llm_twin.h): one GPU per node stands for its node
// exactly (the symmetric mode with pipeline stages, sends and strided
// data-parallel groups), the breakdown adds up to the step, MFU is its
// closed form, fitted profile costs price the passes, and a split that does
// not fit the device's memory is refused naming the flag's field.

#include "sim/llm/llm_twin.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "models/transformer/transformer.h"

namespace clustertwin::sim::llm {
namespace {

LlmSetup small_setup(int tp, int pp, int dp) {
  LlmSetup s;
  s.model = models::transformer::Transformer{1024, 16, 0, 0, 8, 1024, 32000, false};
  s.split.tp = tp;
  s.split.pp = pp;
  s.split.dp = dp;
  s.split.micro_batch = 1;
  s.split.global_batch = 8 * dp;
  return s;
}

cluster::ClusterProfile h100() {
  auto p = cluster::load_cluster_profile("h100-1024");
  EXPECT_TRUE(p.is_ok());
  return *p;
}

LlmResult simulate(const LlmSetup& setup, bool symmetric, const cluster::ClusterProfile& profile) {
  SimOptions o = llm_sim_options(setup.split.tp * setup.split.pp * setup.split.dp);
  o.symmetric = symmetric;
  auto r = simulate_llm(setup, profile, o);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? *r : LlmResult{};
}

TEST(LlmTwinTest, OneGpuPerNodeStandsForItsNodeExactly) {
  const cluster::ClusterProfile profile = h100();
  // TP of a whole node, and TP 4 (two tensor-parallel groups of two data-parallel replicas per node).
  for (int tp : {8, 4}) {
    for (bool zero : {false, true}) {
      LlmSetup s = small_setup(tp, 2, 16 / tp);
      s.split.zero = zero ? 1 : 0;
      const LlmResult every = simulate(s, false, profile);
      const LlmResult one = simulate(s, true, profile);
      EXPECT_EQ(every.sim.simulated_workers, 32);
      EXPECT_EQ(one.sim.simulated_workers, 4);
      EXPECT_NEAR(one.step_s, every.step_s, 1e-9 * every.step_s) << "tp " << tp << ", zero " << zero;
      // The breakdown is the simulated GPUs' own: with TP 4 a node's four data-parallel groups end a few
      // microseconds apart when every GPU is simulated, and together in the node's first GPU's merged group.
      EXPECT_NEAR(one.breakdown.exposed_dp_s, every.breakdown.exposed_dp_s, 1e-3 * every.step_s);
      EXPECT_NEAR(one.breakdown.exposed_tp_s, every.breakdown.exposed_tp_s, 1e-3 * every.step_s);
    }
  }
}

TEST(LlmTwinTest, BreakdownAddsUpToTheStepAndMfuIsItsClosedForm) {
  const cluster::ClusterProfile profile = h100();
  const LlmSetup s = small_setup(8, 2, 2);
  const LlmResult r = simulate(s, true, profile);
  const LlmBreakdown& b = r.breakdown;
  EXPECT_GT(b.compute_s, 0);
  EXPECT_GT(b.exposed_tp_s, 0);
  EXPECT_GT(b.bubble_s, 0);
  EXPECT_NEAR(b.compute_s + b.exposed_tp_s + b.bubble_s + b.exposed_dp_s + b.optimizer_s, r.step_s, 1e-9);
  const double flops = models::transformer::model_flops_per_step(s.model, s.split.global_batch);
  EXPECT_DOUBLE_EQ(r.mfu, flops / (32 * profile.device.peak_flops.at("bf16") * r.step_s));
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 16.0 * 1024 / r.step_s);
}

TEST(LlmTwinTest, TheJsonHoldsTheFiguresAndTheBreakdown) {
  const cluster::ClusterProfile profile = h100();
  const LlmSetup s = small_setup(8, 2, 2);
  const LlmResult r = simulate(s, true, profile);
  auto doc = nlohmann::json::parse(llm_result_json(s, profile, r));
  EXPECT_EQ(doc["step_s"].get<double>(), r.step_s);
  EXPECT_EQ(doc["mfu"].get<double>(), r.mfu);
  EXPECT_EQ(doc["breakdown"]["bubble_s"].get<double>(), r.breakdown.bubble_s);
  EXPECT_NEAR(doc["memory_gib"]["total"].get<double>(), r.memory.total() / kGiB, 1e-12);
  EXPECT_EQ(doc["split"]["dp"].get<int>(), 2);
  const std::string text = llm_result_text(s, profile, r);
  EXPECT_NE(text.find("\nbubble        "), std::string::npos) << text;
}

TEST(LlmTwinTest, FittedCostsPriceThePassesAndSlowerGemmsSlowTheStep) {
  cluster::ClusterProfile profile = h100();
  const LlmSetup s = small_setup(8, 1, 1);
  std::string source;
  auto assumed = llm_device_rates(s, profile, &source);
  ASSERT_TRUE(assumed.is_ok());
  EXPECT_EQ(source, "assumed");
  EXPECT_DOUBLE_EQ(assumed->gemm_efficiency, models::transformer::DeviceRates{}.gemm_efficiency);
  const double fast = simulate(s, true, profile).step_s;
  profile.costs[kGemmKey].flop_rate = 0.4 * profile.device.peak_flops.at("bf16");
  profile.costs[kLayerKey].latency = 1e-4;
  auto fitted = llm_device_rates(s, profile, &source);
  ASSERT_TRUE(fitted.is_ok());
  EXPECT_EQ(source, "fitted: profile h100-1024's llm/* costs");
  EXPECT_DOUBLE_EQ(fitted->gemm_efficiency, 0.4);
  EXPECT_DOUBLE_EQ(fitted->layer_overhead_s, 1e-4);
  EXPECT_GT(simulate(s, true, profile).step_s, fast);
}

TEST(LlmTwinTest, RefusesASplitThatDoesNotFitTheDevice) {
  LlmSetup s = small_setup(1, 1, 8);
  s.model = models::transformer::Transformer{12288, 96, 0, 0, 96, 2048, 51200, false};  // GPT-3 175B
  const Status st = check_llm(s, h100(), 8);
  EXPECT_EQ(st.message().rfind("micro_batch 1: a GPU of the first stage needs", 0), 0u) << st.message();
  s.split.precision = "fp4";
  EXPECT_EQ(check_llm(s, h100(), 8).message(), "precision 'fp4': unknown (allowed: bf16, fp16, fp8)");
}

}  // namespace
}  // namespace clustertwin::sim::llm
