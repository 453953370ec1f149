#include "models/torch/recommender.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <string>
#include <utility>

namespace clustertwin::models::nets {
namespace {

namespace F = torch::nn::functional;

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

Status wrong_family(const spec::RecommenderSpec& spec, const char* want) {
  return Status::invalid_argument("model spec " + quoted(spec.name) + ": family " + quoted(spec.family) + " is not " +
                                  quoted(want));
}

std::vector<torch::nn::Linear> register_mlp(torch::nn::Module& owner, const std::string& prefix,
                                            const std::vector<int64_t>& widths) {
  TORCH_CHECK(widths.size() >= 2, prefix, ": an MLP needs at least two widths, got ", widths.size());
  std::vector<torch::nn::Linear> layers;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    TORCH_CHECK(widths[i] > 0 && widths[i + 1] > 0, prefix, i, ": width ", widths[i], " -> ", widths[i + 1],
                " must be positive");
    layers.push_back(owner.register_module(prefix + std::to_string(i),
                                           torch::nn::Linear(torch::nn::LinearOptions(widths[i], widths[i + 1]))));
  }
  return layers;
}

}  // namespace

// ---------------------------------------------------------------------------
// DLRM
// ---------------------------------------------------------------------------

StatusOr<DlrmDenseOptions> dlrm_dense_options(const spec::RecommenderSpec& spec) {
  if (spec.family != "dlrm") return wrong_family(spec, "dlrm");
  DlrmDenseOptions options;
  options.dense_features = spec.dense_features;
  options.embedding_dim = spec.embedding_dim;
  options.num_embeddings = static_cast<int64_t>(spec.tables.size());
  options.bottom_mlp = spec.bottom_mlp;
  options.top_mlp = spec.top_mlp;
  return options;
}

DlrmDenseImpl::DlrmDenseImpl(DlrmDenseOptions options) : options_(std::move(options)) {
  const DlrmDenseOptions& o = options_;
  TORCH_CHECK(o.num_embeddings >= 1, "DLRM: num_embeddings ", o.num_embeddings, " must be at least 1");
  TORCH_CHECK(!o.bottom_mlp.empty() && o.bottom_mlp.front() == o.dense_features, "DLRM: bottom_mlp must start at ",
              "dense_features ", o.dense_features);
  TORCH_CHECK(o.bottom_mlp.back() == o.embedding_dim, "DLRM: bottom_mlp ends at ", o.bottom_mlp.back(),
              ", must end at embedding_dim ", o.embedding_dim);
  const int64_t vectors = o.num_embeddings + 1;
  const int64_t top_in = o.embedding_dim + vectors * (vectors - 1) / 2;
  TORCH_CHECK(!o.top_mlp.empty() && o.top_mlp.front() == top_in, "DLRM: top_mlp must start at ", top_in,
              " = embedding_dim + V(V-1)/2 with V = ", vectors);
  TORCH_CHECK(o.top_mlp.back() == 1, "DLRM: top_mlp ends at ", o.top_mlp.back(), ", must end at 1");
  bottom_ = register_mlp(*this, "bottom", o.bottom_mlp);
  top_ = register_mlp(*this, "top", o.top_mlp);
  const torch::Tensor pairs = torch::triu_indices(vectors, vectors, /*offset=*/1);
  pair_rows_ = register_buffer("pair_rows", pairs[0].contiguous());
  pair_cols_ = register_buffer("pair_cols", pairs[1].contiguous());
}

torch::Tensor DlrmDenseImpl::interact(const torch::Tensor& bottom_out, const torch::Tensor& embeddings) const {
  // Z [B, V, d]; Z Z^T [B, V, V]; the upper triangle without the diagonal.
  const torch::Tensor z = torch::cat({bottom_out.unsqueeze(1), embeddings}, 1);
  const torch::Tensor gram = torch::bmm(z, z.transpose(1, 2));
  const torch::Tensor pairs =
      gram.index({torch::indexing::Slice(), pair_rows_.to(gram.device()), pair_cols_.to(gram.device())});
  return torch::cat({bottom_out, pairs}, 1);
}

torch::Tensor DlrmDenseImpl::forward(const torch::Tensor& dense, const torch::Tensor& embeddings) {
  const DlrmDenseOptions& o = options_;
  TORCH_CHECK(dense.dim() == 2 && dense.size(1) == o.dense_features, "DLRM: dense must be [B, ", o.dense_features,
              "], got ", dense.sizes());
  TORCH_CHECK(embeddings.dim() == 3 && embeddings.size(0) == dense.size(0) && embeddings.size(1) == o.num_embeddings &&
                  embeddings.size(2) == o.embedding_dim,
              "DLRM: embeddings must be [", dense.size(0), ", ", o.num_embeddings, ", ", o.embedding_dim, "], got ",
              embeddings.sizes());
  torch::Tensor x = dense;
  for (torch::nn::Linear& layer : bottom_)
    x = torch::relu(layer->forward(x));
  x = interact(x, embeddings);
  for (size_t i = 0; i < top_.size(); ++i) {
    x = top_[i]->forward(x);
    if (i + 1 < top_.size()) x = torch::relu(x);
  }
  return x.squeeze(1);
}

// ---------------------------------------------------------------------------
// HSTU
// ---------------------------------------------------------------------------

HstuBlockImpl::HstuBlockImpl(HstuBlockOptions options) : options_(options) {
  TORCH_CHECK(options_.dim > 0, "HSTU block: dim ", options_.dim, " must be positive");
  TORCH_CHECK(options_.heads > 0 && options_.dim % options_.heads == 0, "HSTU block: heads ", options_.heads,
              " must be positive and divide dim ", options_.dim);
  f1_ = register_module("f1", torch::nn::Linear(torch::nn::LinearOptions(options_.dim, 4 * options_.dim)));
  f2_ = register_module("f2", torch::nn::Linear(torch::nn::LinearOptions(options_.dim, options_.dim)));
}

torch::Tensor HstuBlockImpl::forward(const torch::Tensor& x) {
  const int64_t d = options_.dim;
  const int64_t h = options_.heads;
  TORCH_CHECK(x.dim() == 3 && x.size(2) == d, "HSTU block: input must be [B, n, ", d, "], got ", x.sizes());
  const int64_t b = x.size(0);
  const int64_t n = x.size(1);

  const std::vector<torch::Tensor> uvqk = torch::silu(f1_->forward(x)).split(d, /*dim=*/2);
  const torch::Tensor& u = uvqk[0];
  // [B, n, d] -> [B, h, n, d/h]
  const auto heads = [&](const torch::Tensor& t) { return t.reshape({b, n, h, d / h}).transpose(1, 2); };
  const torch::Tensor v = heads(uvqk[1]);
  const torch::Tensor q = heads(uvqk[2]);
  const torch::Tensor k = heads(uvqk[3]);

  // Pointwise aggregated attention: SiLU instead of softmax, so masked
  // entries are multiplied by zero rather than set to -inf.
  const torch::Tensor causal = torch::ones({n, n}, x.options()).tril();
  const torch::Tensor scores = torch::silu(torch::matmul(q, k.transpose(-2, -1))) * causal / static_cast<double>(n);
  const torch::Tensor attended = torch::matmul(scores, v).transpose(1, 2).reshape({b, n, d});
  const torch::Tensor normed = F::layer_norm(attended, F::LayerNormFuncOptions({d}));
  return x + f2_->forward(normed * u);
}

StatusOr<HstuDenseOptions> hstu_dense_options(const spec::RecommenderSpec& spec) {
  if (spec.family != "hstu") return wrong_family(spec, "hstu");
  HstuDenseOptions options;
  options.embedding_dim = spec.embedding_dim;
  options.num_blocks = spec.num_blocks;
  options.heads = spec.attention_heads;
  return options;
}

HstuDenseImpl::HstuDenseImpl(HstuDenseOptions options) : options_(options) {
  TORCH_CHECK(options_.num_blocks > 0, "HSTU: num_blocks ", options_.num_blocks, " must be positive");
  for (int64_t i = 0; i < options_.num_blocks; ++i) {
    blocks_.push_back(register_module("block" + std::to_string(i),
                                      HstuBlock(HstuBlockOptions{options_.embedding_dim, options_.heads})));
  }
}

torch::Tensor HstuDenseImpl::forward(const torch::Tensor& sequence, const torch::Tensor& target) {
  const int64_t d = options_.embedding_dim;
  TORCH_CHECK(sequence.dim() == 3 && sequence.size(1) > 0 && sequence.size(2) == d, "HSTU: sequence must be [B, n, ", d,
              "] with n > 0, got ", sequence.sizes());
  TORCH_CHECK(target.dim() == 2 && target.size(0) == sequence.size(0) && target.size(1) == d, "HSTU: target must be [",
              sequence.size(0), ", ", d, "], got ", target.sizes());
  torch::Tensor x = sequence;
  for (HstuBlock& block : blocks_)
    x = block->forward(x);
  const torch::Tensor last = x.select(1, x.size(1) - 1);
  return (last * target).sum(1);
}

// ---------------------------------------------------------------------------
// Factories
// ---------------------------------------------------------------------------

void init_parameters(torch::nn::Module& module, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator generator = at::detail::createCPUGenerator(seed);
  int64_t initialised = 0;
  for (const auto& item : module.named_modules()) {
    const auto* linear = item.value()->as<torch::nn::Linear>();
    if (linear == nullptr) continue;
    const double bound = 1.0 / std::sqrt(static_cast<double>(linear->options.in_features()));
    TORCH_CHECK(linear->weight.device().is_cpu(), "init_parameters: ", item.key(), " is on ", linear->weight.device(),
                ", must be on the CPU");
    linear->weight.uniform_(-bound, bound, generator);
    initialised += linear->weight.numel();
    if (linear->bias.defined()) {
      linear->bias.uniform_(-bound, bound, generator);
      initialised += linear->bias.numel();
    }
  }
  // A parameter outside a Linear would keep torch's init from the global RNG
  // and break the same-seed-same-parameters promise.
  int64_t total = 0;
  for (const torch::Tensor& p : module.parameters())
    total += p.numel();
  TORCH_CHECK(initialised == total, "init_parameters: ", total - initialised,
              " parameters are outside a Linear and have no seeded init");
}

DlrmDense make_dlrm_dense(const DlrmDenseOptions& options, uint64_t seed) {
  DlrmDense model(options);
  init_parameters(*model, seed);
  return model;
}

HstuDense make_hstu_dense(const HstuDenseOptions& options, uint64_t seed) {
  HstuDense model(options);
  init_parameters(*model, seed);
  return model;
}

StatusOr<torch::nn::AnyModule> make_dense_model(const spec::RecommenderSpec& spec, uint64_t seed) {
  if (spec.family == "dlrm") {
    StatusOr<DlrmDenseOptions> options = dlrm_dense_options(spec);
    if (!options.is_ok()) return options.status();
    return torch::nn::AnyModule(make_dlrm_dense(*options, seed));
  }
  if (spec.family == "hstu") {
    StatusOr<HstuDenseOptions> options = hstu_dense_options(spec);
    if (!options.is_ok()) return options.status();
    return torch::nn::AnyModule(make_hstu_dense(*options, seed));
  }
  return Status::invalid_argument("model spec " + quoted(spec.name) + ": family " + quoted(spec.family) +
                                  " is not one of hstu, dlrm");
}

}  // namespace clustertwin::models::nets
