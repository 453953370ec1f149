#pragma once

// Architecture specs of recommendation models: embedding tables, the dense
// layers, and what one sample costs (parameters, FLOPs, bytes). Pure
// arithmetic, no torch and no SimGrid: the plan builders and the twin size
// their tasks from these numbers, the real executor builds its modules from
// the same widths.
//
// Conventions (README.md says why):
//   - 2 FLOPs per multiply-add; only matrix products are counted. Biases,
//     activations, norms and gating are O(width) per token and left out.
//   - Training = 3 x forward for the dense layers: the backward pass computes
//     the input gradient and the weight gradient, each as costly as forward.
//   - Embedding lookups are bytes, not FLOPs: rows x dim x dtype size per
//     sample. Their backward is a scatter-add of the same bytes.
//
//   sparse ids ──► embedding tables ──► (HSTU blocks | interaction + MLPs) ──► loss
//                  model parallel        data parallel

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::spec {

/// Bytes of one element: "fp32" 4, "fp16" and "bf16" 2, "int8" 1.
/// InvalidArgument naming the dtype and the allowed ones otherwise.
StatusOr<int> dtype_bytes(const std::string& dtype);

/// One embedding table. Each sample looks up `lookups_per_sample` rows: the
/// ids of a multi-hot feature (pooled into one vector) or the positions of a
/// sequence (one vector each).
struct EmbeddingTableSpec {
  std::string name;
  int64_t rows = 0;
  int dim = 0;
  int lookups_per_sample = 0;
  std::string dtype = "fp32";

  double params() const { return static_cast<double>(rows) * dim; }
  /// dim x dtype size. The dtype must be valid (RecommenderSpec::validate).
  int64_t bytes_per_row() const;
  /// The whole table: rows x bytes_per_row.
  double bytes() const { return static_cast<double>(rows) * static_cast<double>(bytes_per_row()); }
  /// Rows read by one sample, before any deduplication: lookups x bytes_per_row.
  double bytes_per_sample() const { return static_cast<double>(lookups_per_sample) * bytes_per_row(); }
};

/// One dense layer and its per-sample cost.
struct LayerSpec {
  std::string name;
  std::string kind;  // "mlp" (one linear layer), "hstu_block", "interaction"
  double params = 0;
  double flops_forward_per_sample = 0;
  /// Activations kept for the backward pass, per sample (see each builder).
  double activation_bytes_per_sample = 0;
};

/// A linear layer in -> out with bias, fp32: params in*out + out; forward
/// FLOPs 2*in*out; keeps its input and its pre-activation output (4*(in+out) bytes).
LayerSpec linear_layer(std::string name, int64_t in, int64_t out);

/// Linear layers widths[0] -> widths[1] -> ... named prefix0, prefix1, ...
/// Needs at least two widths.
std::vector<LayerSpec> mlp_layers(const std::string& prefix, const std::vector<int64_t>& widths);

/// One HSTU block over n tokens of width d (recommender.cpp derives it):
/// params 5d^2 + 5d, forward FLOPs 10*n*d^2 + 4*n^2*d, activations 14*n*d bytes.
LayerSpec hstu_block(std::string name, int64_t n, int64_t d);

/// DLRM's dot interaction of `vectors` vectors of width d (the pairs i < j):
/// no params, forward FLOPs 2 * vectors*(vectors-1)/2 * d.
LayerSpec dot_interaction(std::string name, int64_t vectors, int64_t d);

/// A whole recommendation model. `family` is "hstu" (sequence_length,
/// num_blocks and attention_heads set; bottom_mlp and top_mlp empty) or
/// "dlrm" (dense_features, bottom_mlp and top_mlp set; sequence fields 0).
/// `dense` is derived from those fields by the make_* functions below.
struct RecommenderSpec {
  std::string name;
  std::string description;
  std::string family;
  std::vector<EmbeddingTableSpec> tables;
  std::vector<LayerSpec> dense;
  int embedding_dim = 0;
  // HSTU
  int sequence_length = 0;
  int num_blocks = 0;
  int attention_heads = 0;
  // DLRM
  int dense_features = 0;
  std::vector<int64_t> bottom_mlp;  // dense_features -> ... -> embedding_dim
  std::vector<int64_t> top_mlp;     // interaction output -> ... -> 1

  double dense_params() const;
  double embedding_params() const;
  double total_params() const { return dense_params() + embedding_params(); }
  double forward_flops_per_sample() const;
  /// 3 x forward: forward, then backward's input gradient and weight gradient.
  double train_flops_per_sample() const { return 3 * forward_flops_per_sample(); }
  /// Rows looked up per sample (all tables, before deduplication).
  double embedding_lookups_per_sample() const;
  /// Looked-up rows x dim x dtype size, summed over tables; the embedding
  /// gradient sent back in the backward pass has the same size.
  double embedding_bytes_per_sample() const;
  /// The bytes of all tables (what the shards hold together).
  double embedding_table_bytes() const;
  double activation_bytes_per_sample() const;

  /// Checks the fields a spec built by hand can get wrong; InvalidArgument
  /// "model spec 'x': field 'embedding_dim': 0 must be positive".
  Status validate() const;
};

/// The sizes of an HSTU-style model; make_hstu_spec builds its blocks.
struct HstuOptions {
  std::string name;
  std::string description;
  int embedding_dim = 0;
  int sequence_length = 0;
  int num_blocks = 0;
  int attention_heads = 0;
  std::vector<EmbeddingTableSpec> tables;
};

/// The sizes of a DLRM-style model; make_dlrm_spec builds its layers. The
/// top MLP's input width is computed: embedding_dim + F(F-1)/2 with
/// F = tables + 1 (each table pools to one vector, plus the bottom MLP's).
struct DlrmOptions {
  std::string name;
  std::string description;
  int embedding_dim = 0;
  int dense_features = 0;
  std::vector<int64_t> bottom_hidden;  // widths between dense_features and embedding_dim
  std::vector<int64_t> top_hidden;     // widths between the interaction and the output 1
  std::vector<EmbeddingTableSpec> tables;
};

/// A validated spec, or InvalidArgument naming the model, field and value.
StatusOr<RecommenderSpec> make_hstu_spec(const HstuOptions& options);
StatusOr<RecommenderSpec> make_dlrm_spec(const DlrmOptions& options);

/// The shipped specs, in the order recommender_spec_names() lists them.
std::vector<std::string> recommender_spec_names();

/// A shipped spec by name, or InvalidArgument
/// "unknown model spec 'x' (shipped: hstu-industrial, ...)".
StatusOr<RecommenderSpec> recommender_spec(const std::string& name);

}  // namespace clustertwin::spec
