#include "models/spec/recommender.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace clustertwin::spec {
namespace {

TEST(LayerSpecTest, LinearLayerCountsWeightsBiasAndTwoFlopsPerMultiplyAdd) {
  LayerSpec layer = linear_layer("fc", 3, 4);
  EXPECT_EQ(layer.kind, "mlp");
  EXPECT_DOUBLE_EQ(layer.params, 16);                       // 3*4 weights + 4 biases
  EXPECT_DOUBLE_EQ(layer.flops_forward_per_sample, 24);     // 2 * 3*4 multiply-adds
  EXPECT_DOUBLE_EQ(layer.activation_bytes_per_sample, 28);  // fp32 input 3 + output 4 = 7 floats
}

TEST(LayerSpecTest, MlpParamsOfTheMlperfBottomMlp) {
  double params = 0;
  for (const LayerSpec& layer : mlp_layers("bottom", {13, 512, 256, 128}))
    params += layer.params;
  // (13*512 + 512) + (512*256 + 256) + (256*128 + 128) = 7,168 + 131,328 + 32,896
  EXPECT_DOUBLE_EQ(params, 171'392);
}

TEST(LayerSpecTest, TinyHstuBlock) {
  // n = 4 tokens, d = 8:
  //   projections 2 * n * d * 4d = 2*4*8*32 = 2,048
  //   Q K^T       2 * n^2 * d    = 2*16*8   =   256
  //   A V         2 * n^2 * d    = 2*16*8   =   256
  //   output      2 * n * d * d  = 2*4*8*8  =   512
  //   total                                   3,072  (= 10 n d^2 + 4 n^2 d = 2,560 + 512)
  LayerSpec block = hstu_block("b", 4, 8);
  EXPECT_EQ(block.kind, "hstu_block");
  EXPECT_DOUBLE_EQ(block.flops_forward_per_sample, 3'072);
  EXPECT_DOUBLE_EQ(block.params, 360);                       // 5d^2 + 5d = 320 + 40
  EXPECT_DOUBLE_EQ(block.activation_bytes_per_sample, 448);  // 14 n d = 14*4*8
}

TEST(LayerSpecTest, DotInteractionCountsPairs) {
  LayerSpec layer = dot_interaction("i", 27, 128);
  // 27*26/2 = 351 pairs x 128 multiply-adds x 2 FLOPs
  EXPECT_DOUBLE_EQ(layer.flops_forward_per_sample, 89'856);
  EXPECT_DOUBLE_EQ(layer.params, 0);
}

DlrmOptions tiny_dlrm() {
  DlrmOptions o;
  o.name = "tiny-dlrm";
  o.embedding_dim = 2;
  o.dense_features = 3;
  o.bottom_hidden = {4};
  o.top_hidden = {4};
  o.tables = {{"a", 10, 2, 1}, {"b", 20, 2, 1}};
  return o;
}

TEST(RecommenderSpecTest, TinyDlrm) {
  StatusOr<RecommenderSpec> spec = make_dlrm_spec(tiny_dlrm());
  ASSERT_TRUE(spec.is_ok()) << spec.status().message();
  // F = 2 tables + 1 bottom output = 3 vectors, 3*2/2 = 3 pairs; top input 2 + 3 = 5.
  EXPECT_EQ(spec->bottom_mlp, (std::vector<int64_t>{3, 4, 2}));
  EXPECT_EQ(spec->top_mlp, (std::vector<int64_t>{5, 4, 1}));
  // bottom 2*(3*4 + 4*2) = 40; interaction 2 * 3 pairs * 2 = 12; top 2*(5*4 + 4*1) = 48
  EXPECT_DOUBLE_EQ(spec->forward_flops_per_sample(), 100);
  EXPECT_DOUBLE_EQ(spec->train_flops_per_sample(), 300);  // 3 x forward
  // bottom (12+4) + (8+2) = 26; top (20+4) + (4+1) = 29
  EXPECT_DOUBLE_EQ(spec->dense_params(), 55);
  EXPECT_DOUBLE_EQ(spec->embedding_params(), 60);  // 10*2 + 20*2
  // one row from each table: 2 rows x 2 dims x 4 bytes
  EXPECT_DOUBLE_EQ(spec->embedding_bytes_per_sample(), 16);
  EXPECT_DOUBLE_EQ(spec->embedding_table_bytes(), 240);  // 30 rows x 8 bytes
}

TEST(RecommenderSpecTest, TinyHstuWithMixedDtypes) {
  HstuOptions o;
  o.name = "tiny-hstu";
  o.embedding_dim = 8;
  o.sequence_length = 4;
  o.num_blocks = 2;
  o.attention_heads = 2;
  o.tables = {{"item", 100, 8, 4, "bf16"}, {"user", 10, 8, 1, "fp32"}};
  StatusOr<RecommenderSpec> spec = make_hstu_spec(o);
  ASSERT_TRUE(spec.is_ok()) << spec.status().message();
  ASSERT_EQ(spec->dense.size(), 2u);
  EXPECT_DOUBLE_EQ(spec->forward_flops_per_sample(), 6'144);  // 2 blocks x 3,072 (TinyHstuBlock)
  EXPECT_DOUBLE_EQ(spec->train_flops_per_sample(), 18'432);   // 3 x forward
  EXPECT_DOUBLE_EQ(spec->embedding_lookups_per_sample(), 5);
  // item: 4 lookups x 8 dims x 2 bytes = 64; user: 1 x 8 x 4 = 32
  EXPECT_DOUBLE_EQ(spec->embedding_bytes_per_sample(), 96);
  EXPECT_EQ(spec->tables[0].bytes_per_row(), 16);
}

TEST(RecommenderSpecTest, DlrmCriteoMatchesTheMlperfReference) {
  StatusOr<RecommenderSpec> spec = recommender_spec("dlrm-criteo");
  ASSERT_TRUE(spec.is_ok());
  EXPECT_EQ(spec->tables.size(), 26u);
  EXPECT_EQ(spec->top_mlp, (std::vector<int64_t>{479, 1024, 1024, 512, 256, 1}));  // 479 = 128 + 351
  // bottom 171,392 (MlpParamsOfTheMlperfBottomMlp); top weights
  // 479*1024 + 1024*1024 + 1024*512 + 512*256 + 256*1 = 2,194,688, biases 2,817
  EXPECT_DOUBLE_EQ(spec->dense_params(), 171'392 + 2'194'688 + 2'817);
  // bottom 2*(13*512 + 512*256 + 256*128) = 340,992; interaction 89,856; top 2*2,194,688 = 4,389,376
  EXPECT_DOUBLE_EQ(spec->forward_flops_per_sample(), 340'992 + 89'856 + 4'389'376);
  EXPECT_DOUBLE_EQ(spec->embedding_bytes_per_sample(), 26 * 128 * 4);  // one fp32 row per table
}

TEST(RecommenderSpecTest, HstuIndustrialFlopsAndBytes) {
  StatusOr<RecommenderSpec> spec = recommender_spec("hstu-industrial");
  ASSERT_TRUE(spec.is_ok());
  // per block, n = 1024, d = 512: 10 n d^2 + 4 n^2 d = 2,684,354,560 + 2,147,483,648; 4 blocks
  EXPECT_DOUBLE_EQ(spec->forward_flops_per_sample(), 4 * (2'684'354'560.0 + 2'147'483'648.0));
  // (1,024 item rows + 1 user row) x 512 x 4 bytes
  EXPECT_DOUBLE_EQ(spec->embedding_bytes_per_sample(), 1025.0 * 512 * 4);
  EXPECT_DOUBLE_EQ(spec->embedding_params(), 3e9 * 512);  // 2e9 items + 1e9 users
}

TEST(RecommenderSpecTest, EveryShippedSpecIsValidAndTrainsAtThreeTimesForward) {
  for (const std::string& name : recommender_spec_names()) {
    StatusOr<RecommenderSpec> spec = recommender_spec(name);
    ASSERT_TRUE(spec.is_ok()) << name;
    EXPECT_EQ(spec->name, name);
    EXPECT_TRUE(spec->validate().is_ok()) << spec->validate().message();
    EXPECT_FALSE(spec->description.empty()) << name;
    EXPECT_GT(spec->forward_flops_per_sample(), 0) << name;
    EXPECT_DOUBLE_EQ(spec->train_flops_per_sample(), 3 * spec->forward_flops_per_sample()) << name;
  }
}

TEST(RecommenderSpecTest, UnknownNameListsTheShippedOnes) {
  StatusOr<RecommenderSpec> spec = recommender_spec("dlrm-huge");
  ASSERT_FALSE(spec.is_ok());
  EXPECT_EQ(spec.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "unknown model spec 'dlrm-huge' (shipped: hstu-industrial, fuxi-kuairand, dlrm-criteo, hstu-small, "
            "dlrm-small)");
}

TEST(RecommenderSpecTest, BadFieldsAreNamedWithTheirValue) {
  struct Case {
    const char* what;
    void (*edit)(DlrmOptions&);
    const char* message;
  };
  const Case cases[] = {
      {"zero dim", [](DlrmOptions& o) { o.embedding_dim = 0; },
       "model spec 'tiny-dlrm': field 'embedding_dim': 0 must be positive"},
      {"dtype", [](DlrmOptions& o) { o.tables[1].dtype = "fp8"; },
       "model spec 'tiny-dlrm': field 'tables': table 'b': unknown dtype 'fp8' (allowed: fp32, fp16, bf16, int8)"},
      {"table dim", [](DlrmOptions& o) { o.tables[0].dim = 3; },
       "model spec 'tiny-dlrm': field 'tables': table 'a': dim 3 must equal embedding_dim 2"},
      {"rows", [](DlrmOptions& o) { o.tables[0].rows = -1; },
       "model spec 'tiny-dlrm': field 'tables': table 'a': rows -1 must be positive"},
      {"lookups", [](DlrmOptions& o) { o.tables[1].lookups_per_sample = 0; },
       "model spec 'tiny-dlrm': field 'tables': table 'b': lookups_per_sample 0 must be positive"},
      {"no tables", [](DlrmOptions& o) { o.tables.clear(); },
       "model spec 'tiny-dlrm': field 'tables': a recommender needs at least one embedding table"},
      {"hidden width", [](DlrmOptions& o) { o.top_hidden = {0}; },
       "model spec 'tiny-dlrm': field 'top_mlp': 0 must be positive"},
  };
  for (const Case& c : cases) {
    DlrmOptions o = tiny_dlrm();
    c.edit(o);
    StatusOr<RecommenderSpec> spec = make_dlrm_spec(o);
    ASSERT_FALSE(spec.is_ok()) << c.what;
    EXPECT_EQ(spec.status().message(), c.message) << c.what;
  }
}

TEST(RecommenderSpecTest, HeadsMustDivideTheWidth) {
  HstuOptions o;
  o.name = "h";
  o.embedding_dim = 8;
  o.sequence_length = 4;
  o.num_blocks = 1;
  o.attention_heads = 3;
  o.tables = {{"item", 100, 8, 4}};
  StatusOr<RecommenderSpec> spec = make_hstu_spec(o);
  ASSERT_FALSE(spec.is_ok());
  EXPECT_EQ(spec.status().message(), "model spec 'h': field 'attention_heads': 3 does not divide embedding_dim 8");
}

// 3 significant digits with a decimal suffix: 5.25 M, 1.54 T.
std::string si(double value) {
  const char* suffixes[] = {"", " k", " M", " G", " T", " P"};
  int i = 0;
  while (value >= 1000 && i < 5) {
    value /= 1000;
    ++i;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g%s", value, suffixes[i]);
  return text;
}

// Prints the table of models/spec/README.md; copy it there when a spec changes.
TEST(RecommenderSpecTest, PrintsTheReadmeTable) {
  std::printf(
      "| spec | dense params | embedding params | table bytes | fwd FLOPs/sample | train FLOPs/sample | "
      "lookups/sample | emb bytes/sample | act bytes/sample |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& name : recommender_spec_names()) {
    StatusOr<RecommenderSpec> spec = recommender_spec(name);
    ASSERT_TRUE(spec.is_ok());
    std::printf("| %s | %s | %s | %sB | %s | %s | %.0f | %sB | %sB |\n", name.c_str(), si(spec->dense_params()).c_str(),
                si(spec->embedding_params()).c_str(), si(spec->embedding_table_bytes()).c_str(),
                si(spec->forward_flops_per_sample()).c_str(), si(spec->train_flops_per_sample()).c_str(),
                spec->embedding_lookups_per_sample(), si(spec->embedding_bytes_per_sample()).c_str(),
                si(spec->activation_bytes_per_sample()).c_str());
  }
}

}  // namespace
}  // namespace clustertwin::spec
