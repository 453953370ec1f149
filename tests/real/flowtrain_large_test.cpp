// `clustertwin run flowtrain --model large` for one step on the CPU: the preset sized for one GPU (a ViT-L/14
// encoder and a ~1.2 B decoder, bfloat16 by default) trained for real, one rank in monolithic mode with a global
// batch of 2. About 10 GB: bfloat16 parameters, their gradients and SGD's momentum (3 x 3.1 GB), after the
// float32 model made on the host (6.2 GB) was cast one parameter at a time. It checks what only the real model
// shows: the parameter counts the run reports are the closed form of the preset's shapes, and a bfloat16 step
// gives a finite loss near ln(32000) nats per predicted token at the initial weights.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "models/flowtrain/tiny_plan.h"
#include "tests/cli/run_command.h"
#include "tests/flowtrain/vlm_closed_form.h"

namespace clustertwin::real::flowtrain {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;

// The large preset's sample sizes (tiny_vlm_options.h): 224 px images of 14 px patches, (224/14)^2 = 256 tokens
// each, at most 4 a sample, a context of 2,048 tokens, the dataset's text lengths unscaled.
models::flowtrain::TinyFacts large_facts() {
  models::flowtrain::TinyFacts f;
  f.tokens_per_image = 256;
  f.max_images = 4;
  f.context = 2048;
  f.text_scale = 1.0;
  return f;
}

// The first seed whose first step (samples 0 and 1) has one sample with one image and one without (both sides and
// both kinds of sample train), at most 512 tokens together, so that the step is a minute on two cores, not ten.
uint64_t short_step_seed() {
  for (uint64_t seed = 0; seed < 100000; ++seed) {
    const std::vector<models::flowtrain::TinySample> s = models::flowtrain::tiny_step(large_facts(), seed, 0, 2);
    if (s[0].images + s[1].images == 1 && s[0].tokens + s[1].tokens <= 512) return seed;
  }
  return 0;
}

TEST(FlowTrainLargeTest, OneBFloat16StepOnTheCpuReportsTheClosedFormCountsAndAFiniteLoss) {
  const uint64_t seed = short_step_seed();
  const std::vector<models::flowtrain::TinySample> step = models::flowtrain::tiny_step(large_facts(), seed, 0, 2);
  ASSERT_EQ(step[0].images + step[1].images, 1) << "no seed below 100,000 has a short step";
  const CommandResult r =
      run_clustertwin({"launch",  "--nproc", "1",          "--",       "run",    "flowtrain",          "--model",
                       "large",   "--mode",  "monolithic", "--device", "cpu",    "--global-batch",     "2",
                       "--steps", "1",       "--threads",  "2",        "--seed", std::to_string(seed), "--timeout",
                       "600",     "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::printf("seed %llu: samples of %lld and %lld tokens (%d image)\n%s", static_cast<unsigned long long>(seed),
              static_cast<long long>(step[0].tokens), static_cast<long long>(step[1].tokens),
              step[0].images + step[1].images, r.out.c_str());
  const size_t brace = r.out.find('{');
  ASSERT_NE(brace, std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(brace));
  EXPECT_EQ(j["model"], "large");
  EXPECT_EQ(j["dtype"], "bf16") << "the large preset's default";

  // Encoder: ViT-L/14 (3 channels, 14 px patches, 256 tokens, d 1024, 24 layers, MLP 4096) and its projector to
  // d_model 2048; backbone: vocab 32000, context 2048, d 2048, 22 layers, MLP 8192. tiny_vlm_options_test spells
  // out the sums: 309,472,256 and 1,243,184,384.
  const int64_t encoder = closed_form::encoder(3, 14, 256, 1024, 24, 4096, 2048);
  const int64_t backbone = closed_form::backbone(32000, 2048, 2048, 22, 8192);
  EXPECT_EQ(j["params"]["encoder"].get<int64_t>(), encoder);
  EXPECT_EQ(j["params"]["backbone"].get<int64_t>(), backbone);
  EXPECT_EQ(j["params"]["total"].get<int64_t>(), encoder + backbone);

  // The reported loss is the step's summed loss over the global batch of 2. Predictions: T with images, T - 1
  // without (TinyVlm::sample_loss). Initial head weights N(0, 0.02) on unit-variance features of width 2048 give
  // logits of standard deviation 0.02 sqrt(2048) = 0.9, so a prediction costs ln 32000 + 0.9^2 / 2 = 10.8 nats
  // in expectation: between ln 32000 - 0.5 and ln 32000 + 1.5 per token.
  ASSERT_EQ(j["loss"].size(), 1u);
  const double loss = j["loss"][0].get<double>();
  ASSERT_TRUE(std::isfinite(loss)) << loss;
  const int64_t predictions = step[0].text + step[1].text - 1;
  const double per_token = 2 * loss / static_cast<double>(predictions);
  EXPECT_GT(per_token, std::log(32000.0) - 0.5) << "loss " << loss << " over " << predictions << " predictions";
  EXPECT_LT(per_token, std::log(32000.0) + 1.5) << "loss " << loss << " over " << predictions << " predictions";
  // Model FLOPs (tiny_plan.h): 6 x parameters x tokens plus attention, the backbone's parameters less its
  // embeddings (lookups: 32000 x 2048 tokens, 2048 x 2048 positions).
  models::flowtrain::TinyFacts f = large_facts();
  f.encoder_params = static_cast<double>(encoder);
  f.backbone_params = static_cast<double>(backbone - 32000 * 2048 - 2048 * 2048);
  f.d_vision = 1024;
  f.enc_layers = 24;
  f.d_model = 2048;
  f.layers = 22;
  f.vocab = 32000;
  double flops = 0;
  for (const models::flowtrain::TinySample& s : models::flowtrain::tiny_step(f, seed, 0, 2))
    flops += s.encoder_flops + s.backbone_flops;
  EXPECT_NEAR(j["model_flops_per_step"].get<double>(), flops, 1e-9 * flops);
  EXPECT_GT(j["flops_per_s"].get<double>(), 0);
}

}  // namespace
}  // namespace clustertwin::real::flowtrain
