// real/flowtrain/tiny_vlm_options.h: the VLM's presets and the parameter counts their shapes imply, checked
// against closed forms written here from the layers (not from the library's formula), and the formula against
// the modules it describes where building them is cheap (the tiny model and a wider one).

#include "real/flowtrain/tiny_vlm_options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "models/flowtrain/tiny_plan.h"
#include "real/flowtrain/tiny_vlm.h"
#include "tests/flowtrain/vlm_closed_form.h"

namespace clustertwin::real::flowtrain {
namespace {

using closed_form::backbone;
using closed_form::encoder;

TinyVlmOptions preset(const std::string& name) {
  auto o = tiny_vlm_preset(name);
  EXPECT_TRUE(o.is_ok()) << o.status().message();
  return o.is_ok() ? *o : TinyVlmOptions{};
}

TEST(TinyVlmOptionsTest, AnUnknownPresetIsNamedWithTheAllowedOnes) {
  const auto o = tiny_vlm_preset("huge");
  ASSERT_FALSE(o.is_ok());
  EXPECT_EQ(o.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(o.status().message(), "model 'huge': unknown (allowed: tiny, large)");
  EXPECT_FALSE(tiny_vlm_preset("").is_ok());
  EXPECT_FALSE(tiny_vlm_preset("Large").is_ok()) << "names are exact";
}

TEST(TinyVlmOptionsTest, TheTinyPresetIsTheDefaults) {
  const TinyVlmOptions t = preset("tiny"), d;
  const std::vector<std::pair<int64_t, int64_t>> fields = {
      {t.channels, d.channels},       {t.image_size, d.image_size}, {t.patch, d.patch},
      {t.d_vision, d.d_vision},       {t.enc_layers, d.enc_layers}, {t.enc_heads, d.enc_heads},
      {t.d_vision_ff, d.d_vision_ff}, {t.vocab, d.vocab},           {t.d_model, d.d_model},
      {t.layers, d.layers},           {t.heads, d.heads},           {t.d_ff, d.d_ff},
      {t.max_images, d.max_images},   {t.context, d.context}};
  for (size_t i = 0; i < fields.size(); ++i)
    EXPECT_EQ(fields[i].first, fields[i].second) << "field " << i;
  EXPECT_EQ(t.text_scale, 1.0 / 16);
}

TEST(TinyVlmOptionsTest, TheLargePresetIsViTL14AndADecoderOfAboutOneBillion) {
  const TinyVlmOptions o = preset("large");
  ASSERT_TRUE(check_tiny_vlm_options(o).is_ok()) << check_tiny_vlm_options(o).message();
  EXPECT_EQ(o.tokens_per_image(), 256);  // (224 / 14)^2
  EXPECT_EQ(o.d_vision, 1024);
  EXPECT_EQ(o.enc_layers, 24);
  EXPECT_EQ(o.d_vision / o.enc_heads, 64);  // ViT-L's head width
  EXPECT_EQ(o.d_model / o.heads, 128);
  // The most images a sample holds leave half the context to its text: 4 x 256 = 1,024 of 2,048 tokens.
  EXPECT_EQ(o.max_images * o.tokens_per_image(), o.context / 2);
  EXPECT_EQ(o.text_scale, 1.0);
}

// The large preset's samples have the dataset's own text lengths (median 384, models/flowtrain/vlm.h), not the
// tiny model's scaled-down ones, and fit the context: a sample is mostly text, as in interleaved pretraining.
TEST(TinyVlmOptionsTest, TheLargePresetsSamplesHaveRealisticTextLengths) {
  const TinyVlmOptions o = preset("large");
  models::flowtrain::TinyFacts facts;
  facts.tokens_per_image = o.tokens_per_image();
  facts.max_images = o.max_images;
  facts.context = o.context;
  facts.text_scale = o.text_scale;
  std::vector<int64_t> texts;
  int clamped = 0, with_images = 0;
  for (int64_t id = 0; id < 2000; ++id) {
    const models::flowtrain::TinySample s = models::flowtrain::tiny_sample(facts, 11, id);
    ASSERT_LE(s.tokens, o.context) << "id " << id;
    ASSERT_LE(s.images, o.max_images) << "id " << id;
    texts.push_back(s.text);
    clamped += s.text == o.context - s.images * o.tokens_per_image();
    with_images += s.images > 0;
  }
  std::nth_element(texts.begin(), texts.begin() + 1000, texts.end());
  // Log-normal with median 384, clamped to [16, 8192] and then to the context left: the median stays ~384.
  EXPECT_GT(texts[1000], 300);
  EXPECT_LT(texts[1000], 480);
  // Only the long tail is cut: P(text > 1,024 tokens) = P(z > ln(1024/384)) = P(z > 0.98) ~ 0.16 at most.
  EXPECT_LT(clamped, 2000 * 0.2);
  // P(no image) = 0.25.
  EXPECT_NEAR(with_images, 2000 * 0.75, 2000 * 0.05);
}

TEST(TinyVlmOptionsTest, ThePresetsCountsAreTheClosedForms) {
  // Tiny (tiny_vlm_test's ParameterCountAtTheDefaults derives them layer by layer): encoder 31,488, backbone 75,136.
  EXPECT_EQ(encoder(3, 4, 16, 32, 2, 128, 48), 31488);
  EXPECT_EQ(backbone(64, 256, 48, 2, 192), 75136);
  const TinyVlmParameterCounts tiny = tiny_vlm_parameter_counts(preset("tiny"));
  EXPECT_EQ(tiny.encoder, 31488);
  EXPECT_EQ(tiny.backbone, 75136);
  EXPECT_EQ(tiny.total(), 31488 + 75136);

  // Large, encoder: patch 3*14*14*1024 + 1024 = 603,136; positions 256*1024 = 262,144;
  //   block 4*1024^2 + 2*1024*4096 + 9*1024 + 4096 = 12,596,224, x 24 = 302,309,376; norm 2,048;
  //   projector 1024*2048 + 2048 + 2048^2 + 2048 = 6,295,552.       603,136 + 262,144 + 302,309,376 + 2,048 + 6,295,552
  //                                                                 = 309,472,256
  // Backbone: tokens 32000*2048 = 65,536,000; positions 2048*2048 = 4,194,304;
  //   block 4*2048^2 + 2*2048*8192 + 9*2048 + 8192 = 50,358,272, x 22 = 1,107,881,984; final norm 4,096;
  //   head 2048*32000 + 32000 = 65,568,000.       65,536,000 + 4,194,304 + 1,107,881,984 + 4,096 + 65,568,000
  //                                               = 1,243,184,384
  EXPECT_EQ(encoder(3, 14, 256, 1024, 24, 4096, 2048), 309472256);
  EXPECT_EQ(backbone(32000, 2048, 2048, 22, 8192), 1243184384);
  const TinyVlmParameterCounts large = tiny_vlm_parameter_counts(preset("large"));
  EXPECT_EQ(large.encoder, 309472256);
  EXPECT_EQ(large.backbone, 1243184384);
  EXPECT_EQ(large.total(), 1552656640);
}

// The formula is the modules': built models (cheap ones) have exactly the parameters it counts.
TEST(TinyVlmOptionsTest, TheCountsAreThoseOfTheBuiltModel) {
  TinyVlmOptions wide;  // --width 3: d_vision 96, its MLP 384, d_model 144, its MLP 576
  wide.d_vision *= 3;
  wide.d_vision_ff *= 3;
  wide.d_model *= 3;
  wide.d_ff *= 3;
  TinyVlmOptions odd;  // every size its own, so that a swapped term shows
  odd.channels = 2;
  odd.image_size = 15;
  odd.patch = 5;
  odd.d_vision = 20;
  odd.enc_layers = 3;
  odd.enc_heads = 5;
  odd.d_vision_ff = 36;
  odd.vocab = 50;
  odd.d_model = 24;
  odd.layers = 1;
  odd.heads = 6;
  odd.d_ff = 40;
  odd.max_images = 2;
  odd.context = 40;
  for (const TinyVlmOptions& o : {TinyVlmOptions{}, wide, odd}) {
    auto model = make_tiny_vlm(o, 1);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    int64_t built_encoder = 0, built_backbone = 0;
    for (const torch::Tensor& p : (*model)->encoder_parameters())
      built_encoder += p.numel();
    for (const torch::Tensor& p : (*model)->backbone_parameters())
      built_backbone += p.numel();
    const TinyVlmParameterCounts n = tiny_vlm_parameter_counts(o);
    EXPECT_EQ(n.encoder, built_encoder) << "d_vision " << o.d_vision;
    EXPECT_EQ(n.backbone, built_backbone) << "d_model " << o.d_model;
    EXPECT_EQ(n.encoder,
              encoder(o.channels, o.patch, o.tokens_per_image(), o.d_vision, o.enc_layers, o.d_vision_ff, o.d_model));
    EXPECT_EQ(n.backbone, backbone(o.vocab, o.context, o.d_model, o.layers, o.d_ff));
  }
}

}  // namespace
}  // namespace clustertwin::real::flowtrain
