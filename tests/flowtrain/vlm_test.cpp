// The VLM specs by name, the synthetic dataset's mixture and determinism,
// and a sample's costs from the specs' definitions.

#include "models/flowtrain/vlm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace clustertwin::models::flowtrain {
namespace {

TEST(VlmSpecTest, NamesAndErrors) {
  auto m = vlm_spec("6B+72B");
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m->encoder.name, "6B");
  EXPECT_EQ(m->backbone.name, "72B");
  // 4 x 3200 -> 8192 -> 8192 with the LayerNorm: about 172M.
  EXPECT_EQ(m->projector_params(), 2 * 12800 + (12800 * 8192 + 8192) + (8192 * 8192 + 8192));
  EXPECT_EQ(vlm_spec("6B").status().message(), "model '6B': not ENCODER+BACKBONE (for example 6B+72B or 300M+7B)");
  EXPECT_EQ(vlm_spec("6B+70B").status().message(),
            "model '6B+70B': unknown model size '70B' (known: 0.5B, 1.5B, 7B, 14B, 32B, 72B)");
  EXPECT_EQ(vlm_spec("2B+7B").status().message(), "model '2B+7B': unknown vision encoder '2B' (known: 300M, 6B)");
}

TEST(DatasetTest, TheMixtureAndTheTailAreAsDocumented) {
  DatasetOptions o;
  const int n = 40000;
  std::vector<int> images(9, 0);
  std::vector<int64_t> text;
  for (int i = 0; i < n; ++i) {
    const Sample s = dataset_sample(o, i);
    ASSERT_GE(s.images, 0);
    ASSERT_LE(s.images, 8);
    ++images[static_cast<size_t>(s.images)];
    text.push_back(s.text_tokens);
  }
  const double shares[] = {0.25, 0.35, 0.12, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02};
  for (int k = 0; k < 9; ++k)
    EXPECT_NEAR(images[static_cast<size_t>(k)] / double(n), shares[k], 0.01) << k << " images";
  std::sort(text.begin(), text.end());
  EXPECT_NEAR(static_cast<double>(text[n / 2]), 384, 20);       // the median
  EXPECT_GT(static_cast<double>(text[n * 99 / 100]), 8 * 384);  // a heavy tail: e^(2.33 sigma) ~ 10x
  EXPECT_EQ(text.front(), 16);
  EXPECT_EQ(text.back(), 8192);
  // The same id and seed, the same sample; another seed, another dataset.
  EXPECT_EQ(dataset_sample(o, 7).text_tokens, dataset_sample(o, 7).text_tokens);
  DatasetOptions other = o;
  other.seed = 1;
  int same = 0;
  for (int i = 0; i < 100; ++i)
    same += dataset_sample(o, i).text_tokens == dataset_sample(other, i).text_tokens;
  EXPECT_LT(same, 10);
}

TEST(SampleCostTest, EncoderByImagesBackboneByTokensWithAttentionsSquare) {
  const VlmSpec m = *vlm_spec("300M+7B");
  const Sample text_only{0, 0, 1000};
  const SampleCost t = sample_cost(m, text_only);
  EXPECT_EQ(t.encoder_flops, 0);
  EXPECT_EQ(t.llm_tokens, 1000);
  double sum = 0;
  for (int64_t c = 0; c < 1000; ++c)
    sum += m.backbone.forward_flops_per_token(c);
  EXPECT_NEAR(t.backbone_flops, 3 * sum, 1e-9 * 3 * sum);
  const SampleCost two = sample_cost(m, Sample{1, 2, 1000});
  EXPECT_EQ(two.llm_tokens, 1000 + 2 * 256);
  EXPECT_NEAR(two.encoder_flops,
              6 * (m.encoder.forward_flops_per_image() + 2.0 * static_cast<double>(m.projector_params()) * 256), 1);
  // Attention's square: one sequence of 2T tokens costs more than two of T.
  const double one_long = sample_cost(m, Sample{2, 0, 8000}).backbone_flops;
  const double two_short = 2 * sample_cost(m, Sample{3, 0, 4000}).backbone_flops;
  EXPECT_GT(one_long, two_short * 1.03);
}

}  // namespace
}  // namespace clustertwin::models::flowtrain
