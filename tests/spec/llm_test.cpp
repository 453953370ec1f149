// The LLM specs against the parameter counts Qwen2.5's model cards publish,
// and the per-token costs from their definitions.

#include "models/spec/llm.h"

#include <gtest/gtest.h>

namespace clustertwin::spec {
namespace {

struct Published {
  const char* name;
  double params, non_embedding;  // billions, as each model card states them
};

TEST(LlmSpecTest, ParameterCountsMatchThePublishedOnesWithinTwoPercent) {
  // Qwen2.5 model cards: 0.49B (0.36B non-embedding), 1.54B (1.31B), 7.61B (6.53B), 14.7B (13.1B), 32.5B (31.0B),
  // 72.7B (70.0B).
  for (const Published& p :
       {Published{"0.5B", 0.49, 0.36}, Published{"1.5B", 1.54, 1.31}, Published{"7B", 7.61, 6.53},
        Published{"14B", 14.7, 13.1}, Published{"32B", 32.5, 31.0}, Published{"72B", 72.7, 70.0}}) {
    const LlmSpec s = *llm_spec(p.name);
    EXPECT_NEAR(static_cast<double>(s.params()) / 1e9, p.params, 0.02 * p.params) << p.name;
    EXPECT_NEAR(static_cast<double>(s.non_embedding_params()) / 1e9, p.non_embedding, 0.02 * p.non_embedding) << p.name;
  }
}

TEST(LlmSpecTest, PerTokenCosts) {
  const LlmSpec s = *llm_spec("14B");
  // K and V: 2 x 48 layers x 8 heads x 128 x 2 bytes = 196,608 bytes per token in bf16.
  EXPECT_EQ(s.kv_bytes_per_token(2), 196'608);
  // Attention adds 4 x 48 x 40 x 128 = 983,040 FLOPs per token of context.
  EXPECT_DOUBLE_EQ(s.forward_flops_per_token(1000) - s.forward_flops_per_token(0), 1000 * 983'040.0);
  // Without context: 2 FLOPs per multiplied weight, every weight but the input embedding.
  EXPECT_DOUBLE_EQ(s.forward_flops_per_token(0), 2.0 * static_cast<double>(s.params() - s.vocab * s.hidden));
  EXPECT_EQ(llm_spec("13B").status().message(), "unknown model size '13B' (known: 0.5B, 1.5B, 7B, 14B, 32B, 72B)");
}

}  // namespace
}  // namespace clustertwin::spec
