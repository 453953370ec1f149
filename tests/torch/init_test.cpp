// models/torch/init.h: GPT-2's initialisation by the kind of module that owns
// each parameter, drawn from the seed alone.

#include "models/torch/init.h"

#include <gtest/gtest.h>

namespace clustertwin::models::nets {
namespace {

struct TinyNetImpl : torch::nn::Module {
  TinyNetImpl() {
    embed = register_module("embed", torch::nn::Embedding(64, 32));
    norm = register_module("norm", layer_norm(32));
    proj = register_module("proj", linear(32, 256));
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear proj{nullptr};
};
TORCH_MODULE(TinyNet);

TEST(InitTest, NormsAreOneAndZeroBiasesZeroAndWeightsNormalOfSd002) {
  TinyNet net;
  init_gpt2(*net, 7, "tiny");
  EXPECT_TRUE(torch::equal(net->norm->weight, torch::ones({32})));
  EXPECT_TRUE(torch::equal(net->norm->bias, torch::zeros({32})));
  EXPECT_TRUE(torch::equal(net->proj->bias, torch::zeros({256})));
  // 8,192 draws of N(0, 0.02): the sample's sd within 5% (its standard error is 0.02 / sqrt(2 x 8192) = 0.8%),
  // its mean within 4 standard errors of 0.
  const torch::Tensor w = net->proj->weight;
  EXPECT_NEAR(w.std().item<double>(), 0.02, 0.001);
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 4 * 0.02 / std::sqrt(8192.0));
  EXPECT_NEAR(net->embed->weight.std().item<double>(), 0.02, 0.0015);  // 2,048 draws
}

TEST(InitTest, TheSeedAloneDecidesTheWeights) {
  TinyNet a, b, c;
  init_gpt2(*a, 7, "a");
  torch::manual_seed(12345);  // the global generator plays no part
  init_gpt2(*b, 7, "b");
  init_gpt2(*c, 8, "c");
  EXPECT_TRUE(torch::equal(a->proj->weight, b->proj->weight));
  EXPECT_TRUE(torch::equal(a->embed->weight, b->embed->weight));
  EXPECT_FALSE(torch::equal(a->proj->weight, c->proj->weight));
}

}  // namespace
}  // namespace clustertwin::models::nets
