#include "models/spec/recommender.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "common/check.h"

namespace clustertwin::spec {
namespace {

// Activations are counted in fp32 for the MLP and interaction layers: the
// MLPerf DLRM reference trains in fp32.
constexpr double kActivationBytes = 4;

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

Status field_error(const std::string& model, const std::string& field, const std::string& what) {
  return Status::invalid_argument("model spec " + quoted(model) + ": field " + quoted(field) + ": " + what);
}

Status check_positive(const std::string& model, const std::string& field, int64_t value) {
  if (value > 0) return Status::ok();
  return field_error(model, field, std::to_string(value) + " must be positive");
}

// F(F-1)/2: the pairs i < j of F vectors.
int64_t pairs(int64_t vectors) {
  return vectors * (vectors - 1) / 2;
}

}  // namespace

StatusOr<int> dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "int8") return 1;
  return Status::invalid_argument("unknown dtype " + quoted(dtype) + " (allowed: fp32, fp16, bf16, int8)");
}

int64_t EmbeddingTableSpec::bytes_per_row() const {
  StatusOr<int> size = dtype_bytes(dtype);
  CT_CHECK(size.is_ok()) << "table " << name << ": " << size.status().message();
  return static_cast<int64_t>(dim) * *size;
}

LayerSpec linear_layer(std::string name, int64_t in, int64_t out) {
  CT_CHECK(in > 0 && out > 0) << name << ": " << in << " -> " << out;
  const double w = static_cast<double>(in) * static_cast<double>(out);
  // y = x W + b: in*out multiply-adds per sample.
  return LayerSpec{std::move(name), "mlp", w + static_cast<double>(out), 2 * w,
                   kActivationBytes * static_cast<double>(in + out)};
}

std::vector<LayerSpec> mlp_layers(const std::string& prefix, const std::vector<int64_t>& widths) {
  CT_CHECK(widths.size() >= 2) << prefix << ": an MLP needs at least two widths, got " << widths.size();
  std::vector<LayerSpec> layers;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    layers.push_back(linear_layer(prefix + std::to_string(i), widths[i], widths[i + 1]));
  }
  return layers;
}

// One HSTU block (Zhai et al., "Actions Speak Louder than Words", ICML 2024,
// equations 1-3) over one sample's n tokens of width d:
//
//   U, V, Q, K = Split(SiLU(f1(X)))        f1: d -> 4d, a d x 4d matrix + bias
//   A          = SiLU(Q K^T + rab) / n     per head, summed over heads: n x n x d
//   Y          = f2(Norm(A V) * U)         f2: d -> d, a d x d matrix + bias
//
// Forward FLOPs (2 per multiply-add; SiLU, rab, norm and gating are O(n d) or
// O(n^2 h) and not counted):
//   projections f1:  n tokens x d x 4d multiply-adds  = 2 * n * d * 4d  =  8 n d^2
//   Q K^T:           n x n scores x d                 = 2 * n^2 * d
//   A V:             n x n weights x d                = 2 * n^2 * d
//   output f2:       n x d x d                        = 2 * n * d * d   =  2 n d^2
//   total                                             = 10 n d^2 + 4 n^2 d
// The n^2 terms count the full score matrix although attention is causal; a
// kernel that skips the masked half does about 2 n^2 d there instead.
//
// Params: 4d^2 + 4d (f1) + d^2 + d (f2) = 5d^2 + 5d. The norms (no affine
// weights in the reference code, recalled) and the relative attention bias
// (O(buckets x heads)) are left out.
//
// Activations: 14 n d bytes, the HSTU paper's figure (recalled) of 14d bytes
// per token and layer in bf16 for its fused implementation, which recomputes
// the n x n scores in the backward pass instead of keeping them.
LayerSpec hstu_block(std::string name, int64_t n, int64_t d) {
  CT_CHECK(n > 0 && d > 0) << name << ": n " << n << ", d " << d;
  const double nn = static_cast<double>(n);
  const double dd = static_cast<double>(d);
  const double flops = 2 * nn * dd * 4 * dd + 2 * 2 * nn * nn * dd + 2 * nn * dd * dd;
  return LayerSpec{std::move(name), "hstu_block", 5 * dd * dd + 5 * dd, flops, 14 * nn * dd};
}

// DLRM dot interaction (Naumov et al. 2019): the dot products of every pair
// i < j of F vectors of width d, F(F-1)/2 x d multiply-adds. The reference
// computes the full F x F product Z Z^T and keeps the lower triangle, about
// twice this; we count the pairs it uses. Keeps Z and the pair outputs.
LayerSpec dot_interaction(std::string name, int64_t vectors, int64_t d) {
  CT_CHECK(vectors >= 2 && d > 0) << name << ": vectors " << vectors << ", d " << d;
  const double p = static_cast<double>(pairs(vectors));
  return LayerSpec{std::move(name), "interaction", 0, 2 * p * static_cast<double>(d),
                   kActivationBytes * (static_cast<double>(vectors * d) + p)};
}

double RecommenderSpec::dense_params() const {
  double sum = 0;
  for (const LayerSpec& layer : dense)
    sum += layer.params;
  return sum;
}

double RecommenderSpec::embedding_params() const {
  double sum = 0;
  for (const EmbeddingTableSpec& table : tables)
    sum += table.params();
  return sum;
}

double RecommenderSpec::forward_flops_per_sample() const {
  double sum = 0;
  for (const LayerSpec& layer : dense)
    sum += layer.flops_forward_per_sample;
  return sum;
}

double RecommenderSpec::embedding_lookups_per_sample() const {
  double sum = 0;
  for (const EmbeddingTableSpec& table : tables)
    sum += table.lookups_per_sample;
  return sum;
}

double RecommenderSpec::embedding_bytes_per_sample() const {
  double sum = 0;
  for (const EmbeddingTableSpec& table : tables)
    sum += table.bytes_per_sample();
  return sum;
}

double RecommenderSpec::embedding_table_bytes() const {
  double sum = 0;
  for (const EmbeddingTableSpec& table : tables)
    sum += table.bytes();
  return sum;
}

double RecommenderSpec::activation_bytes_per_sample() const {
  double sum = 0;
  for (const LayerSpec& layer : dense)
    sum += layer.activation_bytes_per_sample;
  return sum;
}

Status RecommenderSpec::validate() const {
  const std::string model = name.empty() ? std::string("(unnamed)") : name;
  if (name.empty()) return field_error(model, "name", "must not be empty");
  CT_RETURN_IF_ERROR(check_positive(model, "embedding_dim", embedding_dim));
  if (tables.empty()) return field_error(model, "tables", "a recommender needs at least one embedding table");
  for (const EmbeddingTableSpec& table : tables) {
    const std::string prefix = "table " + quoted(table.name) + ": ";
    if (table.name.empty()) return field_error(model, "tables", "a table has no name");
    if (table.rows <= 0)
      return field_error(model, "tables", prefix + "rows " + std::to_string(table.rows) + " must be positive");
    if (table.dim != embedding_dim) {
      return field_error(
          model, "tables",
          prefix + "dim " + std::to_string(table.dim) + " must equal embedding_dim " + std::to_string(embedding_dim));
    }
    if (table.lookups_per_sample <= 0) {
      return field_error(
          model, "tables",
          prefix + "lookups_per_sample " + std::to_string(table.lookups_per_sample) + " must be positive");
    }
    StatusOr<int> size = dtype_bytes(table.dtype);
    if (!size.is_ok()) return field_error(model, "tables", prefix + size.status().message());
  }
  if (family == "hstu") {
    CT_RETURN_IF_ERROR(check_positive(model, "sequence_length", sequence_length));
    CT_RETURN_IF_ERROR(check_positive(model, "num_blocks", num_blocks));
    CT_RETURN_IF_ERROR(check_positive(model, "attention_heads", attention_heads));
    if (embedding_dim % attention_heads != 0) {
      return field_error(
          model, "attention_heads",
          std::to_string(attention_heads) + " does not divide embedding_dim " + std::to_string(embedding_dim));
    }
    return Status::ok();
  }
  if (family == "dlrm") {
    CT_RETURN_IF_ERROR(check_positive(model, "dense_features", dense_features));
    for (const auto& [field, widths] : {std::pair{"bottom_mlp", &bottom_mlp}, std::pair{"top_mlp", &top_mlp}}) {
      if (widths->size() < 2) return field_error(model, field, "needs at least two widths");
      for (int64_t w : *widths)
        CT_RETURN_IF_ERROR(check_positive(model, field, w));
    }
    const auto expect = [&](const char* field, const char* end, int64_t got, int64_t want) {
      if (got == want) return Status::ok();
      return field_error(model, field,
                         std::string(end) + " width " + std::to_string(got) + " must be " + std::to_string(want));
    };
    const int64_t vectors = static_cast<int64_t>(tables.size()) + 1;
    CT_RETURN_IF_ERROR(expect("bottom_mlp", "first", bottom_mlp.front(), dense_features));
    CT_RETURN_IF_ERROR(expect("bottom_mlp", "last", bottom_mlp.back(), embedding_dim));
    // embedding_dim (bottom output) + F(F-1)/2 (interaction)
    CT_RETURN_IF_ERROR(expect("top_mlp", "first", top_mlp.front(), embedding_dim + pairs(vectors)));
    CT_RETURN_IF_ERROR(expect("top_mlp", "last", top_mlp.back(), 1));
    return Status::ok();
  }
  return field_error(model, "family", quoted(family) + " is not one of hstu, dlrm");
}

StatusOr<RecommenderSpec> make_hstu_spec(const HstuOptions& options) {
  RecommenderSpec spec;
  spec.name = options.name;
  spec.description = options.description;
  spec.family = "hstu";
  spec.tables = options.tables;
  spec.embedding_dim = options.embedding_dim;
  spec.sequence_length = options.sequence_length;
  spec.num_blocks = options.num_blocks;
  spec.attention_heads = options.attention_heads;
  CT_RETURN_IF_ERROR(spec.validate());
  for (int b = 0; b < spec.num_blocks; ++b) {
    spec.dense.push_back(hstu_block("hstu_block" + std::to_string(b), spec.sequence_length, spec.embedding_dim));
  }
  return spec;
}

StatusOr<RecommenderSpec> make_dlrm_spec(const DlrmOptions& options) {
  RecommenderSpec spec;
  spec.name = options.name;
  spec.description = options.description;
  spec.family = "dlrm";
  spec.tables = options.tables;
  spec.embedding_dim = options.embedding_dim;
  spec.dense_features = options.dense_features;
  const int64_t vectors = static_cast<int64_t>(options.tables.size()) + 1;
  spec.bottom_mlp.push_back(options.dense_features);
  spec.bottom_mlp.insert(spec.bottom_mlp.end(), options.bottom_hidden.begin(), options.bottom_hidden.end());
  spec.bottom_mlp.push_back(options.embedding_dim);
  spec.top_mlp.push_back(options.embedding_dim + pairs(vectors));
  spec.top_mlp.insert(spec.top_mlp.end(), options.top_hidden.begin(), options.top_hidden.end());
  spec.top_mlp.push_back(1);
  CT_RETURN_IF_ERROR(spec.validate());
  spec.dense = mlp_layers("bottom", spec.bottom_mlp);
  spec.dense.push_back(dot_interaction("interaction", vectors, spec.embedding_dim));
  for (LayerSpec& layer : mlp_layers("top", spec.top_mlp)) {
    spec.dense.push_back(std::move(layer));
  }
  return spec;
}

// ---------------------------------------------------------------------------
// The shipped specs. Every number says where it comes from.
// ---------------------------------------------------------------------------
namespace {

// Rows of the 26 Criteo categorical features C1..C26 in the MLPerf DLRM
// training reference (facebookresearch/dlrm, Criteo Terabyte with
// --max-ind-range=40000000; checked against the reference's source).
constexpr std::array<int64_t, 26> kMlperfCriteoRows = {
    39884406, 39043, 17289, 7420, 20263, 3,  7120,     1543,     63,       38532951, 2953546, 403346, 10,
    2208,     11938, 155,   4,    976,   14, 39979771, 25641295, 39664984, 585935,   12972,   108,    36};

constexpr int64_t kNoCap = std::numeric_limits<int64_t>::max();

std::vector<EmbeddingTableSpec> criteo_tables(int dim, int64_t max_rows) {
  std::vector<EmbeddingTableSpec> tables;
  for (size_t i = 0; i < kMlperfCriteoRows.size(); ++i) {
    // One id per sample and feature: Criteo's categorical columns are one-hot.
    tables.push_back({"C" + std::to_string(i + 1), std::min(kMlperfCriteoRows[i], max_rows), dim, 1});
  }
  return tables;
}

StatusOr<RecommenderSpec> hstu_industrial() {
  HstuOptions o;
  o.name = "hstu-industrial";
  o.description = "NestPipe's 1,536-NPU setting: HSTU backbone over user sequences, industrial vocabulary";
  o.embedding_dim = 512;     // NestPipe paper: studied 512/768/1024; assumption: the smallest is the base
  o.sequence_length = 1024;  // NestPipe paper: studied 512-2048; assumption: 1024, inside that range
  o.num_blocks = 4;          // NestPipe paper: 2/4/8 dense layers; assumption: the middle one
  o.attention_heads = 4;     // assumption: not given; heads change no FLOPs here, only the real module's shape
  // Assumption: "billions" of ids. 2e9 items + 1e9 users = 3e9 rows x 512 =
  // 1.5e12 params, the size of the HSTU paper's 1.5-trillion-parameter model.
  // Every history position looks up its item; the user id is one lookup
  // (assumption: a contextual feature, not an extra token).
  o.tables = {{"item_id", 2'000'000'000, 512, o.sequence_length}, {"user_id", 1'000'000'000, 512, 1}};
  return make_hstu_spec(o);
}

StatusOr<RecommenderSpec> fuxi_kuairand() {
  HstuOptions o;
  o.name = "fuxi-kuairand";
  o.description =
      "NestPipe's 128-GPU setting: KuaiRand-27K with a FuXi-style backbone approximated as HSTU blocks "
      "(FuXi-alpha's extra attention channels and feed-forward stage are not counted)";
  o.embedding_dim = 256;  // assumption: not given; half the industrial width for a 12x smaller cluster
  // Assumption: 512, the low end of NestPipe's 512-2048 study. KuaiRand
  // users have "thousands of historical interactions on average" (KuaiRand
  // README), about 11.8k from the recalled counts below, so 512 is filled.
  o.sequence_length = 512;
  o.num_blocks = 4;       // assumption: as hstu-industrial
  o.attention_heads = 4;  // assumption: as hstu-industrial
  // KuaiRand-27K (Gao et al., CIKM 2022), recalled: 27,285 users, 32,038,725
  // videos, 322,278,385 interactions.
  o.tables = {{"video_id", 32'038'725, 256, o.sequence_length}, {"user_id", 27'285, 256, 1}};
  return make_hstu_spec(o);
}

StatusOr<RecommenderSpec> dlrm_criteo() {
  DlrmOptions o;
  o.name = "dlrm-criteo";
  o.description = "MLPerf v1 DLRM on Criteo Terabyte: 13 dense + 26 categorical features, dim 128";
  o.embedding_dim = 128;         // MLPerf DLRM reference: --arch-sparse-feature-size=128
  o.dense_features = 13;         // Criteo: 13 integer columns
  o.bottom_hidden = {512, 256};  // MLPerf DLRM reference: bottom 13-512-256-128
  // MLPerf DLRM reference: top 479-1024-1024-512-256-1, where 479 = 128 + 27*26/2.
  o.top_hidden = {1024, 1024, 512, 256};
  o.tables = criteo_tables(o.embedding_dim, kNoCap);  // the reference's own rows
  return make_dlrm_spec(o);
}

StatusOr<RecommenderSpec> hstu_small() {
  HstuOptions o;
  o.name = "hstu-small";
  o.description = "A small HSTU for the real CPU executor: milliseconds per step";
  o.embedding_dim = 32;    // assumption: small enough for ~1 MFLOP per sample
  o.sequence_length = 32;  // assumption: as embedding_dim
  o.num_blocks = 2;        // assumption: the fewest that still stacks blocks
  o.attention_heads = 2;   // assumption: more than one, to exercise the head split
  // Assumption: 10^4-10^5 rows, so that a batch repeats keys (deduplication
  // and DBP's intersection are non-trivial) and the tables fit in cache.
  o.tables = {{"item_id", 50'000, 32, o.sequence_length}, {"user_id", 10'000, 32, 1}};
  return make_hstu_spec(o);
}

StatusOr<RecommenderSpec> dlrm_small() {
  DlrmOptions o;
  o.name = "dlrm-small";
  o.description = "A small DLRM for the real CPU executor: Criteo's 26 features, tables capped at 1e5 rows";
  o.embedding_dim = 16;                                // assumption: small enough for milliseconds per step on a CPU
  o.dense_features = 13;                               // Criteo: 13 integer columns, so Criteo files can feed it
  o.bottom_hidden = {64};                              // assumption: one hidden layer, 13-64-16
  o.top_hidden = {64};                                 // assumption: one hidden layer, 367-64-1 (367 = 16 + 27*26/2)
  o.tables = criteo_tables(o.embedding_dim, 100'000);  // assumption: MLPerf rows capped at 10^5
  return make_dlrm_spec(o);
}

using Factory = StatusOr<RecommenderSpec> (*)();
constexpr std::array<std::pair<const char*, Factory>, 5> kShipped = {{
    {"hstu-industrial", hstu_industrial},
    {"fuxi-kuairand", fuxi_kuairand},
    {"dlrm-criteo", dlrm_criteo},
    {"hstu-small", hstu_small},
    {"dlrm-small", dlrm_small},
}};

}  // namespace

std::vector<std::string> recommender_spec_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : kShipped)
    names.emplace_back(name);
  return names;
}

StatusOr<RecommenderSpec> recommender_spec(const std::string& name) {
  std::string shipped;
  for (const auto& [known, factory] : kShipped) {
    if (name == known) {
      StatusOr<RecommenderSpec> spec = factory();
      CT_CHECK(spec.is_ok()) << "shipped spec " << name << ": " << spec.status().message();
      return spec;
    }
    shipped += (shipped.empty() ? "" : ", ") + std::string(known);
  }
  return Status::invalid_argument("unknown model spec " + quoted(name) + " (shipped: " + shipped + ")");
}

}  // namespace clustertwin::spec
