// The split search (sim/llm/llm_search.h): its closed form is the 1F1B
// formula on a free network, every candidate fits memory and uses every GPU,
// and the search returns the simulated candidates fastest first.

#include "sim/llm/llm_search.h"

#include <gtest/gtest.h>

#include "models/llm/llm_plan.h"

namespace clustertwin::sim::llm {
namespace {

cluster::ClusterProfile search_h100() {
  auto p = cluster::load_cluster_profile("h100-1024");
  EXPECT_TRUE(p.is_ok());
  return *p;
}

LlmSetup gpt_1b() {
  LlmSetup s;
  s.model = models::transformer::Transformer{2048, 16, 0, 0, 16, 2048, 51200, false};
  s.split.global_batch = 64;
  return s;
}

TEST(LlmSearchTest, TheEstimateIsTheOneFOneBFormulaOnAFreeNetwork) {
  cluster::ClusterProfile free = search_h100();
  free.intra_node.link.bandwidth = 1e30;
  free.nics.link.bandwidth = 1e30;
  LlmSetup s = gpt_1b();
  s.split.pp = 4;
  s.split.global_batch = 8;  // 8 micro-batches
  s.split.recompute = models::llm::Recompute::kNone;
  auto rates = llm_device_rates(s, free);
  ASSERT_TRUE(rates.is_ok());
  const auto costs = models::llm::step_costs(s.model, s.split, *rates);
  const double pass = costs.at("llm/forward") + costs.at("llm/backward");
  const double head = costs.at("llm/forward_head") + costs.at("llm/backward_head") - pass;
  EXPECT_NEAR(estimate_step_seconds(s, free), (8 + 4 - 1) * pass + 8 * head + costs.at("llm/optimizer/stage0"), 1e-12);
}

TEST(LlmSearchTest, CandidatesUseEveryGpuAndFitMemory) {
  const cluster::ClusterProfile p = search_h100();
  const LlmSetup base = gpt_1b();
  const std::vector<models::llm::Split> splits = candidate_splits(base, p, 16);
  ASSERT_FALSE(splits.empty());
  for (const models::llm::Split& s : splits) {
    EXPECT_EQ(s.tp * s.pp * s.dp, 16);
    EXPECT_LE(s.tp, p.devices_per_node);
    LlmSetup setup = base;
    setup.split = s;
    EXPECT_TRUE(check_llm(setup, p, 16).is_ok());
  }
}

TEST(LlmSearchTest, SimulatedCandidatesComeFastestFirst) {
  auto search = search_splits(gpt_1b(), search_h100(), 16, 3, 2);
  ASSERT_TRUE(search.is_ok()) << search.status().message();
  ASSERT_EQ(search->ranked.size(), 3u);
  for (size_t i = 1; i < search->ranked.size(); ++i)
    EXPECT_LE(search->ranked[i - 1].step_s, search->ranked[i].step_s);
  EXPECT_GT(search->ranked[0].mfu, 0);
  LlmSetup huge = gpt_1b();
  huge.model.hidden = 65536;
  huge.model.heads = 64;
  huge.model.layers = 64;
  EXPECT_EQ(search_splits(huge, search_h100(), 8, 3, 2).status().message().rfind("workers 8: no split of the model", 0),
            0u);
}

}  // namespace
}  // namespace clustertwin::sim::llm
