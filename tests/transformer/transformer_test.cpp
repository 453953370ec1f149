// models/transformer/transformer.h: parameters and model FLOPs against
// Narayanan et al. 2021's closed forms, and a published model's size.

#include "models/transformer/transformer.h"

#include <gtest/gtest.h>

namespace clustertwin::models::transformer {
namespace {

// GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, d_model 12288, 96 heads, context 2048, vocabulary 50257.
Transformer gpt3_175b() {
  Transformer t;
  t.hidden = 12288;
  t.heads = 96;
  t.layers = 96;
  t.seq = 2048;
  t.vocab = 50257;
  return t;
}

TEST(TransformerTest, GptParametersAreNarayanansClosedFormPlusTheFinalNorm) {
  for (const Transformer& t : {gpt3_175b(), Transformer{1024, 16, 0, 0, 24, 1024, 51200, false}}) {
    const int64_t l = t.layers, h = t.hidden;
    // 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h)), multiplied out.
    const int64_t narayanan = 12 * l * h * h + 13 * l * h + (t.vocab + t.seq) * h;
    EXPECT_EQ(parameter_count(t), narayanan + 2 * h) << "hidden " << h;
  }
}

TEST(TransformerTest, Gpt3IsItsPublished175BillionParameters) {
  const double billions = static_cast<double>(parameter_count(gpt3_175b())) / 1e9;
  EXPECT_NEAR(billions, 175.0, 0.5);  // 174.6: "175B" is the paper's rounding
}

TEST(TransformerTest, GptModelFlopsAreNarayanansClosedForm) {
  const Transformer t = gpt3_175b();
  const double b = 1536, s = 2048, l = 96, h = 12288, v = 50257;
  const double closed = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  // The closed form drops the biases' FLOPs (2 per bias and token): within their share.
  EXPECT_NEAR(model_flops_per_step(t, 1536) / closed, 1.0, 1e-3);
}

TEST(TransformerTest, GroupedQueryAttentionAndAGatedMlpShrinkAndGrowTheLayer) {
  Transformer t{4096, 32, 0, 11008, 32, 4096, 32000, true};
  const int64_t full = layer_weights(t);
  t.kv_heads = 8;
  // Keys and values of 8 heads of 128 instead of 32: 2 x 4096 x 3072 fewer weights.
  EXPECT_EQ(full - layer_weights(t), 2 * 4096 * (4096 - 1024));
  EXPECT_EQ(layer_weights(t), 4096 * (4096 + 2048) + 4096 * 4096 + 3 * 4096 * 11008);
}

// The shipped LLMs and vision encoders as transformers: their matrices are the
// specs' own (a spec counts biases and norms on top).
TEST(TransformerTest, TheShippedSpecsAreTransformersOfTheirOwnMatrices) {
  for (const spec::LlmSpec& m : spec::llm_specs()) {
    const Transformer t = from_llm_spec(m);
    const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
    EXPECT_EQ(head_dim(t), m.head_dim) << m.name;
    EXPECT_EQ(layer_weights(t), m.hidden * (q + 2 * kv) + q * m.hidden + 3 * m.hidden * m.mlp) << m.name;
    // The spec's parameters outside the embeddings: those matrices, plus at most 0.1% of biases and norms.
    const double matrices = static_cast<double>(m.layers * layer_weights(t));
    EXPECT_GE(static_cast<double>(m.non_embedding_params()), matrices) << m.name;
    EXPECT_LE(static_cast<double>(m.non_embedding_params()), 1.001 * matrices) << m.name;
  }
  for (const spec::VitSpec& v : spec::vit_specs()) {
    const Transformer t = from_vit_spec(v);
    EXPECT_EQ(layer_weights(t), 4 * v.hidden * v.hidden + 2 * v.hidden * v.mlp) << v.name;
    EXPECT_EQ(t.seq, v.patches()) << v.name;
    EXPECT_EQ(t.vocab, 0) << v.name;
  }
}

}  // namespace
}  // namespace clustertwin::models::transformer
