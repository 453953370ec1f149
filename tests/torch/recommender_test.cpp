#include "models/torch/recommender.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace clustertwin::models::nets {
namespace {

spec::RecommenderSpec shipped(const std::string& name) {
  StatusOr<spec::RecommenderSpec> spec = spec::recommender_spec(name);
  EXPECT_TRUE(spec.is_ok()) << spec.status().message();
  return *spec;
}

int64_t count_params(const torch::nn::Module& module) {
  int64_t sum = 0;
  for (const torch::Tensor& p : module.parameters())
    sum += p.numel();
  return sum;
}

bool same_params(const torch::nn::Module& a, const torch::nn::Module& b) {
  const std::vector<torch::Tensor> pa = a.parameters();
  const std::vector<torch::Tensor> pb = b.parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::equal(pa[i], pb[i])) return false;
  }
  return true;
}

// Inputs drawn from their own generator, so they do not depend on the models.
struct DlrmBatch {
  torch::Tensor dense, embeddings;
};
DlrmBatch dlrm_batch(const DlrmDenseOptions& o, int64_t batch, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {torch::randn({batch, o.dense_features}, gen), torch::randn({batch, o.num_embeddings, o.embedding_dim}, gen)};
}

struct HstuBatch {
  torch::Tensor sequence, target;
};
HstuBatch hstu_batch(const HstuDenseOptions& o, int64_t batch, int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {torch::randn({batch, n, o.embedding_dim}, gen), torch::randn({batch, o.embedding_dim}, gen)};
}

DlrmDenseOptions dlrm_small() {
  StatusOr<DlrmDenseOptions> o = dlrm_dense_options(shipped("dlrm-small"));
  EXPECT_TRUE(o.is_ok()) << o.status().message();
  return *o;
}

HstuDenseOptions hstu_small() {
  StatusOr<HstuDenseOptions> o = hstu_dense_options(shipped("hstu-small"));
  EXPECT_TRUE(o.is_ok()) << o.status().message();
  return *o;
}

// ---------------------------------------------------------------------------
// Shapes and parameter counts
// ---------------------------------------------------------------------------

TEST(DlrmDenseTest, OutputIsOneLogitPerSample) {
  const DlrmDenseOptions o = dlrm_small();
  EXPECT_EQ(o.num_embeddings, 26);  // Criteo's 26 categorical features
  DlrmDense model = make_dlrm_dense(o, 1);
  const DlrmBatch in = dlrm_batch(o, 5, 7);
  EXPECT_EQ(model->forward(in.dense, in.embeddings).sizes(), torch::IntArrayRef({5}));
  // Interaction: d + V(V-1)/2 = 16 + 27*26/2 = 367 columns.
  const torch::Tensor bottom = torch::zeros({5, o.embedding_dim});
  EXPECT_EQ(model->interact(bottom, in.embeddings).sizes(), torch::IntArrayRef({5, 367}));
}

TEST(DlrmDenseTest, ParameterCountEqualsTheSpec) {
  const spec::RecommenderSpec spec = shipped("dlrm-small");
  DlrmDense model = make_dlrm_dense(dlrm_small(), 1);
  // bottom 13-64-16: (13*64 + 64) + (64*16 + 16) = 896 + 1,040
  // top 367-64-1:    (367*64 + 64) + (64*1 + 1)  = 23,552 + 65
  // total 25,553; the interaction has no parameters.
  EXPECT_EQ(count_params(*model), 25'553);
  EXPECT_EQ(static_cast<double>(count_params(*model)), spec.dense_params());
}

TEST(HstuDenseTest, OutputIsOneLogitPerSample) {
  const HstuDenseOptions o = hstu_small();
  EXPECT_EQ(o.heads, 2);
  HstuDense model = make_hstu_dense(o, 1);
  const HstuBatch in = hstu_batch(o, 3, 32, 7);
  EXPECT_EQ(model->forward(in.sequence, in.target).sizes(), torch::IntArrayRef({3}));
  HstuBlock first = model->blocks().at(0);  // a holder copy shares the module
  EXPECT_EQ(first->forward(in.sequence).sizes(), torch::IntArrayRef({3, 32, 32}));
}

TEST(HstuDenseTest, ParameterCountEqualsTheSpec) {
  const spec::RecommenderSpec spec = shipped("hstu-small");
  HstuDense model = make_hstu_dense(hstu_small(), 1);
  // Per block, d = 32: f1 (32*128 + 128) + f2 (32*32 + 32) = 4,224 + 1,056
  // = 5,280 = 5d^2 + 5d; 2 blocks = 10,560. The norm has no affine weights.
  EXPECT_EQ(count_params(*model), 10'560);
  EXPECT_EQ(static_cast<double>(count_params(*model)), spec.dense_params());
}

TEST(DenseModelTest, AnyModuleForBothFamilies) {
  for (const std::string name : {"dlrm-small", "hstu-small"}) {
    const spec::RecommenderSpec spec = shipped(name);
    StatusOr<torch::nn::AnyModule> model = make_dense_model(spec, 3);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ(static_cast<double>(count_params(*model->ptr())), spec.dense_params()) << name;
    torch::Tensor logits;
    if (spec.family == "dlrm") {
      const DlrmBatch in = dlrm_batch(dlrm_small(), 4, 1);
      logits = model->forward(in.dense, in.embeddings);
    } else {
      const HstuBatch in = hstu_batch(hstu_small(), 4, 32, 1);
      logits = model->forward(in.sequence, in.target);
    }
    EXPECT_EQ(logits.sizes(), torch::IntArrayRef({4})) << name;
  }
}

TEST(DenseModelTest, WrongFamilyIsAnErrorNamingIt) {
  const spec::RecommenderSpec hstu = shipped("hstu-small");
  StatusOr<DlrmDenseOptions> dlrm = dlrm_dense_options(hstu);
  ASSERT_FALSE(dlrm.is_ok());
  EXPECT_EQ(dlrm.status().message(), "model spec 'hstu-small': family 'hstu' is not 'dlrm'");

  spec::RecommenderSpec odd = hstu;
  odd.family = "wide-and-deep";
  StatusOr<torch::nn::AnyModule> any = make_dense_model(odd, 1);
  ASSERT_FALSE(any.is_ok());
  EXPECT_EQ(any.status().message(), "model spec 'hstu-small': family 'wide-and-deep' is not one of hstu, dlrm");
}

TEST(DlrmDenseTest, BadWidthsAreRejected) {
  DlrmDenseOptions o = dlrm_small();
  o.top_mlp.front() = 366;
  EXPECT_THROW(DlrmDense{o}, c10::Error);
}

// ---------------------------------------------------------------------------
// Determinism from the seed
// ---------------------------------------------------------------------------

TEST(DenseModelTest, SameSeedGivesBitwiseEqualParametersAndOutputs) {
  // Observed on a 2-vCPU machine with OMP_NUM_THREADS unset: a process's first batched matmul sums in another
  // order than every later one (libtorch runs 1 thread there, one per physical core, while OpenBLAS's OpenMP build
  // loaded with 2 and switches only during its first call). One throwaway forward of each model kind comes first, so
  // that what is compared below is the two models, not a first call against a second.
  make_dlrm_dense(dlrm_small(), 1)
      ->forward(dlrm_batch(dlrm_small(), 8, 1).dense, dlrm_batch(dlrm_small(), 8, 1).embeddings);
  make_hstu_dense(hstu_small(), 1)
      ->forward(hstu_batch(hstu_small(), 4, 32, 1).sequence, hstu_batch(hstu_small(), 4, 32, 1).target);
  const DlrmDenseOptions d = dlrm_small();
  DlrmDense d1 = make_dlrm_dense(d, 42);
  torch::manual_seed(12345);  // the global RNG must not matter
  DlrmDense d2 = make_dlrm_dense(d, 42);
  EXPECT_TRUE(same_params(*d1, *d2));
  const DlrmBatch din = dlrm_batch(d, 8, 9);
  EXPECT_TRUE(torch::equal(d1->forward(din.dense, din.embeddings), d2->forward(din.dense, din.embeddings)));

  const HstuDenseOptions h = hstu_small();
  HstuDense h1 = make_hstu_dense(h, 42);
  torch::manual_seed(999);
  HstuDense h2 = make_hstu_dense(h, 42);
  EXPECT_TRUE(same_params(*h1, *h2));
  const HstuBatch hin = hstu_batch(h, 4, 32, 9);
  EXPECT_TRUE(torch::equal(h1->forward(hin.sequence, hin.target), h2->forward(hin.sequence, hin.target)));
}

TEST(DenseModelTest, DifferentSeedGivesDifferentParametersAndOutputs) {
  const DlrmDenseOptions d = dlrm_small();
  DlrmDense d1 = make_dlrm_dense(d, 42);
  DlrmDense d2 = make_dlrm_dense(d, 43);
  EXPECT_FALSE(same_params(*d1, *d2));
  const DlrmBatch din = dlrm_batch(d, 8, 9);
  EXPECT_FALSE(torch::equal(d1->forward(din.dense, din.embeddings), d2->forward(din.dense, din.embeddings)));

  const HstuDenseOptions h = hstu_small();
  HstuDense h1 = make_hstu_dense(h, 42);
  HstuDense h2 = make_hstu_dense(h, 43);
  EXPECT_FALSE(same_params(*h1, *h2));
  const HstuBatch hin = hstu_batch(h, 4, 32, 9);
  EXPECT_FALSE(torch::equal(h1->forward(hin.sequence, hin.target), h2->forward(hin.sequence, hin.target)));
}

TEST(DenseModelTest, InitStaysInsideTheLinearBound) {
  DlrmDense model = make_dlrm_dense(dlrm_small(), 5);
  // bottom0 is 13 -> 64: bound 1/sqrt(13) ~= 0.277.
  const torch::Tensor w = model->bottom_layers().at(0)->weight;
  EXPECT_LE(w.abs().max().item<double>(), 1.0 / std::sqrt(13.0));
  EXPECT_GT(w.abs().max().item<double>(), 0.2);  // 832 draws: the max is near the bound
}

// ---------------------------------------------------------------------------
// The DLRM interaction by hand
// ---------------------------------------------------------------------------

TEST(DlrmDenseTest, TinyInteractionByHand) {
  // B = 1, F = 2 embeddings, d = 2; bottom 2 -> 2 (identity, zero bias),
  // top 5 -> 1 with 5 = d + V(V-1)/2 = 2 + 3*2/2.
  DlrmDenseOptions o;
  o.dense_features = 2;
  o.embedding_dim = 2;
  o.num_embeddings = 2;
  o.bottom_mlp = {2, 2};
  o.top_mlp = {5, 1};
  DlrmDense model = make_dlrm_dense(o, 0);
  {
    torch::NoGradGuard no_grad;
    model->bottom_layers().at(0)->weight.copy_(torch::eye(2));
    model->bottom_layers().at(0)->bias.zero_();
    // Powers of ten, so the logit shows which input each column holds.
    model->top_layers().at(0)->weight.copy_(torch::tensor({{1.0F, 10.0F, 100.0F, 1000.0F, 10000.0F}}));
    model->top_layers().at(0)->bias.fill_(0.5F);
  }
  const torch::Tensor dense = torch::tensor({{1.0F, 2.0F}});
  const torch::Tensor embeddings = torch::tensor({{{3.0F, 4.0F}, {5.0F, -2.0F}}});
  // bottom = ReLU(I [1, 2] + 0) = [1, 2]; Z = [[1, 2], [3, 4], [5, -2]]
  //   z0.z1 = 1*3 + 2*4    = 11
  //   z0.z2 = 1*5 + 2*(-2) = 1
  //   z1.z2 = 3*5 + 4*(-2) = 7
  // top input [1, 2, 11, 1, 7]
  // logit = 1*1 + 10*2 + 100*11 + 1000*1 + 10000*7 + 0.5
  //       = 1 + 20 + 1,100 + 1,000 + 70,000 + 0.5 = 72,121.5 (exact in fp32)
  torch::nn::Linear bottom = model->bottom_layers().at(0);
  const torch::Tensor top_in = model->interact(torch::relu(bottom->forward(dense)), embeddings);
  EXPECT_TRUE(torch::equal(top_in, torch::tensor({{1.0F, 2.0F, 11.0F, 1.0F, 7.0F}})));
  const torch::Tensor logit = model->forward(dense, embeddings);
  ASSERT_EQ(logit.sizes(), torch::IntArrayRef({1}));
  EXPECT_EQ(logit.item<float>(), 72121.5F);
}

// ---------------------------------------------------------------------------
// Gradients reach every parameter
// ---------------------------------------------------------------------------

void expect_every_grad_nonzero(const torch::nn::Module& module, const std::string& what) {
  for (const auto& item : module.named_parameters()) {
    const torch::Tensor& grad = item.value().grad();
    ASSERT_TRUE(grad.defined()) << what << ": " << item.key() << " has no gradient";
    EXPECT_TRUE(grad.ne(0).any().item<bool>()) << what << ": " << item.key() << " has an all-zero gradient";
  }
}

TEST(DenseModelTest, GradientsFlowToEveryParameter) {
  const DlrmDenseOptions d = dlrm_small();
  DlrmDense dlrm = make_dlrm_dense(d, 11);
  const DlrmBatch din = dlrm_batch(d, 16, 3);
  dlrm->forward(din.dense, din.embeddings).sum().backward();
  expect_every_grad_nonzero(*dlrm, "dlrm-small");

  const HstuDenseOptions h = hstu_small();
  HstuDense hstu = make_hstu_dense(h, 11);
  const HstuBatch hin = hstu_batch(h, 4, 32, 3);
  hstu->forward(hin.sequence, hin.target).sum().backward();
  expect_every_grad_nonzero(*hstu, "hstu-small");
}

TEST(DenseModelTest, GradientsFlowToTheLookedUpEmbeddings) {
  // The real executor sends these gradients back to the sharded tables.
  const DlrmDenseOptions d = dlrm_small();
  DlrmDense dlrm = make_dlrm_dense(d, 11);
  DlrmBatch din = dlrm_batch(d, 4, 3);
  din.embeddings.requires_grad_(true);
  dlrm->forward(din.dense, din.embeddings).sum().backward();
  ASSERT_TRUE(din.embeddings.grad().defined());
  EXPECT_TRUE(din.embeddings.grad().ne(0).any().item<bool>());

  const HstuDenseOptions h = hstu_small();
  HstuDense hstu = make_hstu_dense(h, 11);
  HstuBatch hin = hstu_batch(h, 2, 8, 3);
  hin.sequence.requires_grad_(true);
  hin.target.requires_grad_(true);
  hstu->forward(hin.sequence, hin.target).sum().backward();
  // Every position reaches the last one through the causal attention.
  EXPECT_TRUE(hin.sequence.grad().ne(0).any(2).all().item<bool>());
  EXPECT_TRUE(hin.target.grad().ne(0).any().item<bool>());
}

// ---------------------------------------------------------------------------
// The causal mask
// ---------------------------------------------------------------------------

TEST(HstuBlockTest, LaterPositionsDoNotChangeEarlierOutputs) {
  for (const int64_t heads : {1, 2}) {
    HstuBlock block(HstuBlockOptions{16, heads});
    init_parameters(*block, 21);
    torch::NoGradGuard no_grad;
    at::Generator gen = at::detail::createCPUGenerator(8);
    const int64_t n = 6;
    const torch::Tensor x = torch::randn({2, n, 16}, gen);
    for (int64_t changed = 1; changed < n; ++changed) {
      torch::Tensor y = x.clone();
      y.select(1, changed).add_(torch::randn({2, 16}, gen));
      const torch::Tensor out_x = block->forward(x);
      const torch::Tensor out_y = block->forward(y);
      using torch::indexing::Slice;
      // Positions before `changed` see only positions <= themselves: the
      // masked scores are multiplied by exactly zero, so they are bitwise equal.
      EXPECT_TRUE(torch::equal(out_x.index({Slice(), Slice(0, changed)}), out_y.index({Slice(), Slice(0, changed)})))
          << "heads " << heads << ", changed position " << changed;
      // The changed position itself does change.
      EXPECT_FALSE(torch::allclose(out_x.select(1, changed), out_y.select(1, changed)))
          << "heads " << heads << ", changed position " << changed;
    }
  }
}

TEST(HstuBlockTest, EarlierPositionsDoChangeLaterOutputs) {
  // The converse: without it the causal test would pass for a block that
  // attends to nothing.
  HstuBlock block(HstuBlockOptions{16, 2});
  init_parameters(*block, 21);
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(8);
  const torch::Tensor x = torch::randn({1, 4, 16}, gen);
  torch::Tensor y = x.clone();
  y.select(1, 0).add_(1.0);
  EXPECT_FALSE(torch::allclose(block->forward(x).select(1, 3), block->forward(y).select(1, 3)));
}

}  // namespace
}  // namespace clustertwin::models::nets
