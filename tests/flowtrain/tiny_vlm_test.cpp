#include "real/flowtrain/tiny_vlm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "models/flowtrain/vlm.h"

namespace clustertwin::real::flowtrain {
namespace {

// SgdStepsReduceTheLoss: the step per predicted token, and the steps.
constexpr double kLearningRate = 0.5;
constexpr int kSteps = 30;

TinyVlm make(const TinyVlmOptions& o, uint64_t seed) {
  auto m = make_tiny_vlm(o, seed);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return *m;
}

int64_t count(const std::vector<torch::Tensor>& parameters) {
  int64_t n = 0;
  for (const torch::Tensor& p : parameters)
    n += p.numel();
  return n;
}

// The first sample of dataset seed 1 whose image count satisfies `wanted`.
template <class Predicate>
TinyVlmSample first_sample(const TinyVlmOptions& o, Predicate wanted) {
  for (int64_t id = 0;; ++id) {
    TinyVlmSample s = tiny_vlm_sample(o, 1, id);
    if (wanted(s.images.size(0))) return s;
  }
}

// Each parameter's gradient after `run_backward` (undefined where none flowed).
template <class Backward>
std::vector<torch::Tensor> gradients(TinyVlm& m, Backward run_backward) {
  m->zero_grad(/*set_to_none=*/true);
  run_backward();
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : m->parameters())
    out.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  return out;
}

// Every pair defined alike, and equal within 1e-6 of the larger gradient's magnitude.
void expect_same_gradients(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].defined(), b[i].defined()) << "parameter " << i;
    if (!a[i].defined()) continue;
    const double scale = std::max(a[i].abs().max().item<double>(), b[i].abs().max().item<double>());
    EXPECT_LE((a[i] - b[i]).abs().max().item<double>(), 1e-6 * scale) << "parameter " << i;
  }
}

TEST(TinyVlmTest, ParameterCountAtTheDefaults) {
  TinyVlm m = make(TinyVlmOptions{}, 1);
  // Encoder side, d_vision 32, P = (16/4)^2 = 16:
  //   patch conv 3*4*4*32 + 32 = 1568; position 16*32 = 512;
  //   block: 2 norms 2*64 + qkv 32*96+96 + out 32*32+32 + fc1 32*128+128 + fc2 128*32+32 = 12704, x 2 = 25408;
  //   norm 64; projector 32*48+48 + 48*48+48 = 3936.                    1568+512+25408+64+3936 = 31488
  EXPECT_EQ(count(m->encoder_parameters()), 31488);
  // Backbone side, d_model 48: token 64*48 = 3072; position 256*48 = 12288;
  //   block: 2 norms 2*96 + qkv 48*144+144 + out 48*48+48 + fc1 48*192+192 + fc2 192*48+48 = 28272, x 2 = 56544;
  //   final norm 96; head 48*64+64 = 3136.                           3072+12288+56544+96+3136 = 75136
  EXPECT_EQ(count(m->backbone_parameters()), 75136);
  const torch::Tensor tokens = m->encode(torch::zeros({3, 3, 16, 16}));
  EXPECT_EQ(tokens.sizes(), (std::vector<int64_t>{3, 16, 48}));
}

TEST(TinyVlmTest, SameSeedSameParametersAndTheSidesPartitionThem) {
  TinyVlm a = make(TinyVlmOptions{}, 7);
  torch::manual_seed(123);
  (void)torch::rand({1000});
  TinyVlm b = make(TinyVlmOptions{}, 7);
  TinyVlm c = make(TinyVlmOptions{}, 8);
  const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  bool all_equal = true, any_differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    all_equal &= torch::equal(pa[i], pb[i]);
    any_differs |= !torch::equal(pa[i], pc[i]);
  }
  EXPECT_TRUE(all_equal);
  EXPECT_TRUE(any_differs);

  std::set<const void*> all, encoder, backbone;
  for (const torch::Tensor& p : a->parameters())
    all.insert(p.unsafeGetTensorImpl());
  for (const torch::Tensor& p : a->encoder_parameters())
    encoder.insert(p.unsafeGetTensorImpl());
  for (const torch::Tensor& p : a->backbone_parameters())
    backbone.insert(p.unsafeGetTensorImpl());
  EXPECT_EQ(encoder.size(), a->encoder_parameters().size());
  EXPECT_EQ(backbone.size(), a->backbone_parameters().size());
  std::set<const void*> both;
  std::set_intersection(encoder.begin(), encoder.end(), backbone.begin(), backbone.end(),
                        std::inserter(both, both.begin()));
  EXPECT_TRUE(both.empty());
  std::set<const void*> either = encoder;
  either.insert(backbone.begin(), backbone.end());
  EXPECT_EQ(either, all);
}

TEST(TinyVlmTest, SamplesAreDeterministicAndFollowFlowTrainsSizes) {
  const TinyVlmOptions o;
  const int64_t p = o.tokens_per_image();
  models::flowtrain::DatasetOptions dataset;
  dataset.seed = 3;
  std::set<int64_t> image_counts, text_lengths;
  for (int64_t id = 0; id < 1000; ++id) {
    const TinyVlmSample s = tiny_vlm_sample(o, 3, id);
    const int64_t k = s.images.size(0), t = s.text.size(0);
    ASSERT_EQ(s.images.sizes(), (std::vector<int64_t>{k, 3, 16, 16}));
    ASSERT_EQ(s.text.scalar_type(), torch::kLong);
    const models::flowtrain::Sample sizes = models::flowtrain::dataset_sample(dataset, id);
    ASSERT_EQ(k, std::min<int64_t>(sizes.images, o.max_images)) << "id " << id;
    const double expected_t = std::clamp(std::round(sizes.text_tokens / 16.0), 2.0, double(o.context - k * p));
    ASSERT_EQ(t, static_cast<int64_t>(expected_t)) << "id " << id;
    ASSERT_GE(s.text.min().item<int64_t>(), 0);
    ASSERT_LT(s.text.max().item<int64_t>(), o.vocab);
    image_counts.insert(k);
    text_lengths.insert(t);
  }
  // Images: P(0) = 0.25, P(8) = 0.02, so 1000 ids hold both (P(no 8) = 0.98^1000 ~ 2e-9).
  EXPECT_EQ(*image_counts.begin(), 0);
  EXPECT_EQ(*image_counts.rbegin(), o.max_images);
  EXPECT_GT(text_lengths.size(), 20u);

  const TinyVlmSample a = tiny_vlm_sample(o, 3, 42), b = tiny_vlm_sample(o, 3, 42), c = tiny_vlm_sample(o, 4, 42);
  EXPECT_TRUE(torch::equal(a.images, b.images));
  EXPECT_TRUE(torch::equal(a.text, b.text));
  EXPECT_FALSE(a.text.sizes() == c.text.sizes() && torch::equal(a.text, c.text));
}

// Without images the text counts up by 1 with probability 0.9 (+ 1/64 by chance); with images by 1..4 after
// their brightness. So the share of +1 steps is ~0.9 without images, and far from 0 or 1 over all samples.
TEST(TinyVlmTest, TextFollowsTheImagesBrightness) {
  const TinyVlmOptions o;
  int64_t steps = 0, plus_one = 0;
  std::set<int64_t> strides;
  for (int64_t id = 0; id < 200; ++id) {
    const TinyVlmSample s = tiny_vlm_sample(o, 5, id);
    const torch::Tensor step = (s.text.slice(0, 1) - s.text.slice(0, 0, -1)).remainder(o.vocab);
    if (s.images.size(0) == 0) {
      steps += step.numel();
      plus_one += step.eq(1).sum().item<int64_t>();
    } else {
      // The most common step is the stride; brightness ~ the pixels' mean.
      const int64_t stride = std::get<0>(torch::mode(step)).item<int64_t>();
      const double brightness = s.images.mean().item<double>();
      if (step.numel() >= 10 && std::abs(brightness * 4 - std::round(brightness * 4)) > 0.1) {
        EXPECT_EQ(stride, 1 + std::min<int64_t>(3, static_cast<int64_t>(4 * brightness))) << "id " << s.id;
      }
      strides.insert(stride);
    }
  }
  ASSERT_GT(steps, 100);
  EXPECT_NEAR(static_cast<double>(plus_one) / steps, 0.9 + 0.1 / 64, 0.05);
  EXPECT_GE(strides.size(), 3u);
}

// The executor's split: the encoder side backward from the gradient the backbone side sends back gives the
// gradients of one backward through the whole model.
TEST(TinyVlmTest, SplitBackwardGivesTheEndToEndGradients) {
  const TinyVlmOptions o;
  TinyVlm m = make(o, 11);
  const TinyVlmSample s = first_sample(o, [](int64_t k) { return k >= 2; });
  const std::vector<torch::Tensor> whole =
      gradients(m, [&] { m->sample_loss(m->encode(s.images), s.text).backward(); });
  const std::vector<torch::Tensor> split = gradients(m, [&] {
    const torch::Tensor e = m->encode(s.images);
    const torch::Tensor received = e.detach().requires_grad_();
    m->sample_loss(received, s.text).backward();
    e.backward(received.grad());
  });
  expect_same_gradients(whole, split);
  for (const torch::Tensor& p : m->encoder_parameters()) {
    ASSERT_TRUE(p.grad().defined());
  }
  EXPECT_GT(m->encoder_parameters()[0].grad().abs().max().item<double>(), 0);

  // Without images: the encoder gets no gradient, and an empty [0, P, d] equals an undefined tensor.
  const TinyVlmSample text_only = first_sample(o, [](int64_t k) { return k == 0; });
  const std::vector<torch::Tensor> undefined =
      gradients(m, [&] { m->sample_loss(torch::Tensor(), text_only.text).backward(); });
  const std::vector<torch::Tensor> empty = gradients(m, [&] {
    m->sample_loss(torch::zeros({0, o.tokens_per_image(), o.d_model}).requires_grad_(), text_only.text).backward();
  });
  expect_same_gradients(undefined, empty);
  for (const torch::Tensor& p : m->encoder_parameters()) {
    EXPECT_FALSE(p.grad().defined());
  }
}

// In bfloat16 the sides still meet in float32 (the pool's and the loss's dtype), the casts are in the graph (the
// image tokens' gradient reaches the bfloat16 encoder), and the loss is the float32 model's up to bfloat16's
// rounding, but not bitwise (the compute really is in bfloat16).
TEST(TinyVlmTest, BFloat16ComputesInsideAndMeetsInFloat32) {
  const TinyVlmOptions o;
  TinyVlm full = make(o, 12), half = make(o, 12);
  half->to(torch::kBFloat16);
  const TinyVlmSample s = first_sample(o, [](int64_t k) { return k >= 2; });
  const torch::Tensor e = half->encode(s.images);
  EXPECT_EQ(e.scalar_type(), torch::kFloat);
  const torch::Tensor received = e.detach().requires_grad_();
  const torch::Tensor loss = half->sample_loss(received, s.text);
  EXPECT_EQ(loss.scalar_type(), torch::kFloat);
  loss.backward();
  ASSERT_TRUE(received.grad().defined());
  EXPECT_EQ(received.grad().scalar_type(), torch::kFloat);
  e.backward(received.grad());
  for (const torch::Tensor& p : half->parameters()) {
    ASSERT_EQ(p.scalar_type(), torch::kBFloat16);
    ASSERT_TRUE(p.grad().defined());
    ASSERT_EQ(p.grad().scalar_type(), torch::kBFloat16);
  }
  EXPECT_GT(half->encoder_parameters()[0].grad().abs().max().item<double>(), 0);
  // bfloat16 keeps 8 significant bits (a relative 2^-9 per rounding); the summed loss of ~T ln 64 nats moves by
  // far less than 1%.
  const double reference = full->sample_loss(full->encode(s.images), s.text).item<double>();
  EXPECT_NEAR(loss.item<double>(), reference, 1e-2 * reference);
  EXPECT_NE(loss.item<double>(), reference);
}

// A zero head gives uniform logits: each prediction costs ln(vocab), T of them with images, T - 1 without.
TEST(TinyVlmTest, LossIsSummedOverThePredictedTokens) {
  const TinyVlmOptions o;
  TinyVlm m = make(o, 2);
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : m->named_parameters())
      if (item.key().rfind("backbone.head.", 0) == 0) item.value().zero_();
  }
  const TinyVlmSample with = first_sample(o, [](int64_t k) { return k >= 1; });
  const TinyVlmSample without = first_sample(o, [](int64_t k) { return k == 0; });
  const double ln_vocab = std::log(64.0);
  EXPECT_NEAR(m->sample_loss(m->encode(with.images), with.text).item<double>(), with.text.size(0) * ln_vocab, 1e-3);
  EXPECT_NEAR(m->sample_loss(torch::Tensor(), without.text).item<double>(), (without.text.size(0) - 1) * ln_vocab,
              1e-3);
}

// Samples' losses add: gradients accumulated one sample at a time (as the executor does) equal those of their sum.
TEST(TinyVlmTest, LossesOfSamplesAddUp) {
  const TinyVlmOptions o;
  TinyVlm m = make(o, 4);
  std::vector<TinyVlmSample> batch;
  for (int64_t id = 0; id < 4; ++id)
    batch.push_back(tiny_vlm_sample(o, 9, id));
  auto loss_of = [&](const TinyVlmSample& s) {
    return m->sample_loss(s.images.size(0) > 0 ? m->encode(s.images) : torch::Tensor(), s.text);
  };
  double one_by_one = 0;
  const std::vector<torch::Tensor> accumulated = gradients(m, [&] {
    for (const TinyVlmSample& s : batch) {
      torch::Tensor loss = loss_of(s);
      one_by_one += loss.item<double>();
      loss.backward();
    }
  });
  double summed = 0;
  const std::vector<torch::Tensor> of_sum = gradients(m, [&] {
    torch::Tensor total = torch::zeros({});
    for (const TinyVlmSample& s : batch)
      total = total + loss_of(s);
    summed = total.item<double>();
    total.backward();
  });
  EXPECT_NEAR(one_by_one, summed, 1e-4 * summed);
  expect_same_gradients(accumulated, of_sum);
}

// A few SGD steps on a handful of samples lower their loss: the data has something to learn and the gradients
// reach it.
TEST(TinyVlmTest, SgdStepsReduceTheLoss) {
  const TinyVlmOptions o;
  TinyVlm m = make(o, 6);
  std::vector<TinyVlmSample> batch;
  int64_t predictions = 0;
  for (int64_t id = 0; id < 6; ++id) {
    batch.push_back(tiny_vlm_sample(o, 2, id));
    predictions += batch.back().text.size(0) - (batch.back().images.size(0) > 0 ? 0 : 1);
  }
  // The loss is summed over tokens, so the step is scaled by their count.
  torch::optim::SGD sgd(m->parameters(), torch::optim::SGDOptions(kLearningRate / predictions).momentum(0.9));
  auto total_loss = [&] {
    torch::Tensor total = torch::zeros({});
    for (const TinyVlmSample& s : batch)
      total = total + m->sample_loss(s.images.size(0) > 0 ? m->encode(s.images) : torch::Tensor(), s.text);
    return total;
  };
  const double before = total_loss().item<double>();
  // At init the logits are near uniform: ln 64 = 4.16 per prediction.
  EXPECT_NEAR(before, predictions * std::log(64.0), 0.05 * before);
  for (int step = 0; step < kSteps; ++step) {
    sgd.zero_grad();
    total_loss().backward();
    sgd.step();
  }
  const double after = total_loss().item<double>();
  // The data's entropy is the floor: 0.9016 ln(1/0.9016) + 63 x (0.1/64) ln(64/0.1) = 0.73 nats per token, 18% of
  // ln 64. Measured: 405 -> 77 (19%); half is a margin either way.
  EXPECT_LT(after, 0.5 * before) << "before " << before << ", after " << after;
}

TEST(TinyVlmTest, BadOptionsAreNamed) {
  struct Case {
    void (*edit)(TinyVlmOptions&);
    const char* message;
  };
  const Case cases[] = {
      {[](TinyVlmOptions& o) { o.patch = 5; }, "patch 5 must divide image_size 16"},
      {[](TinyVlmOptions& o) { o.enc_heads = 3; }, "enc_heads 3 must divide d_vision 32"},
      {[](TinyVlmOptions& o) { o.heads = 5; }, "heads 5 must divide d_model 48"},
      {[](TinyVlmOptions& o) { o.d_model = 0; }, "d_model 0 must be in [1, 2^24]"},
      {[](TinyVlmOptions& o) { o.enc_layers = -1; }, "enc_layers -1 must be in [1, 2^24]"},
      {[](TinyVlmOptions& o) { o.max_images = -1; }, "max_images -1 must be in [0, 1024]"},
      {[](TinyVlmOptions& o) { o.text_scale = 0; }, "text_scale 0 must be in (0, 1024]"},
      // 8 images x 16 tokens = 128 image tokens, plus 2 text tokens.
      {[](TinyVlmOptions& o) { o.context = 100; },
       "context 100 must be >= max_images 8 x 16 tokens per image + 2 = 130"},
  };
  for (const Case& c : cases) {
    TinyVlmOptions o;
    c.edit(o);
    const Status s = check_tiny_vlm_options(o);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << c.message;
    EXPECT_EQ(s.message(), c.message);
    EXPECT_EQ(make_tiny_vlm(o, 1).status().message(), c.message);
  }
  EXPECT_TRUE(check_tiny_vlm_options(TinyVlmOptions{}).is_ok());
}

}  // namespace
}  // namespace clustertwin::real::flowtrain
