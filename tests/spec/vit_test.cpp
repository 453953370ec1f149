// The encoder specs against the parameter counts InternViT's model cards
// publish, and an image's cost from its definition.

#include "models/spec/vit.h"

#include <gtest/gtest.h>

namespace clustertwin::spec {
namespace {

TEST(VitSpecTest, ParameterCountsMatchThePublishedOnesWithinThreePercent) {
  // InternViT-300M-448px: 0.3B; InternViT-6B (48 layers): 5.9B.
  EXPECT_NEAR(static_cast<double>(vit_spec("300M")->params()) / 1e9, 0.304, 0.03 * 0.304);
  EXPECT_NEAR(static_cast<double>(vit_spec("6B")->params()) / 1e9, 5.9, 0.03 * 5.9);
}

TEST(VitSpecTest, AnImagesCost) {
  const VitSpec s = *vit_spec("300M");
  EXPECT_EQ(s.patches(), 1024);  // (448 / 14)^2
  EXPECT_EQ(s.tokens_per_image(), 256);
  // Per layer: 2 x (4 h^2 + 2 h f) x n for the weights, 4 h n^2 for attention; plus the patch projection.
  const double h = 1024, f = 4096, n = 1024;
  const double expected = 24 * (2 * (4 * h * h + 2 * h * f) * n + 4 * h * n * n) + 2 * (3 * 196 * h) * n;
  EXPECT_DOUBLE_EQ(s.forward_flops_per_image(), expected);
  EXPECT_EQ(vit_spec("1B").status().message(), "unknown vision encoder '1B' (known: 300M, 6B)");
}

}  // namespace
}  // namespace clustertwin::spec
