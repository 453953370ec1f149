#include "models/flowtrain/vlm.h"

#include <algorithm>
#include <cmath>

#include "common/hash.h"

namespace clustertwin::models::flowtrain {
namespace {

// Uniform in (0, 1) from 53 bits of a 64-bit word.
double uniform_open(uint64_t word) {
  return (static_cast<double>(word >> 11) + 0.5) * 0x1.0p-53;
}

constexpr double kImageShares[] = {0.25, 0.35, 0.12, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02};

}  // namespace

int64_t VlmSpec::projector_params() const {
  const int64_t in = 4 * encoder.hidden, h = backbone.hidden;
  return 2 * in + (in * h + h) + (h * h + h);
}

StatusOr<VlmSpec> vlm_spec(const std::string& name) {
  const size_t plus = name.find('+');
  if (plus == std::string::npos) {
    return Status::invalid_argument("model '" + name + "': not ENCODER+BACKBONE (for example 6B+72B or 300M+7B)");
  }
  auto encoder = spec::vit_spec(name.substr(0, plus));
  if (!encoder.is_ok()) return Status::invalid_argument("model '" + name + "': " + encoder.status().message());
  auto backbone = spec::llm_spec(name.substr(plus + 1));
  if (!backbone.is_ok()) return Status::invalid_argument("model '" + name + "': " + backbone.status().message());
  return VlmSpec{name, *encoder, *backbone};
}

Sample dataset_sample(const DatasetOptions& o, int64_t id) {
  const uint64_t base = mix64(o.seed ^ mix64(static_cast<uint64_t>(id) + 0x5f1ull));
  Sample s;
  s.id = id;
  double u = uniform_open(splitmix64(base));
  s.images = 8;
  for (int k = 0; k < 9; ++k) {
    if (u < kImageShares[k]) {
      s.images = k;
      break;
    }
    u -= kImageShares[k];
  }
  // Box-Muller: one standard normal from two uniforms.
  const double u1 = uniform_open(splitmix64(base + 1)), u2 = uniform_open(splitmix64(base + 2));
  const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  const double text = o.text_median * std::exp(o.text_sigma * z);
  s.text_tokens = static_cast<int64_t>(std::clamp(std::round(text), 16.0, static_cast<double>(o.max_text)));
  return s;
}

SampleCost sample_cost(const VlmSpec& m, const Sample& s) {
  SampleCost c;
  const int64_t image_tokens = s.images * m.encoder.tokens_per_image();
  c.llm_tokens = s.text_tokens + image_tokens;
  c.encoder_flops = 3.0 * s.images *
                    (m.encoder.forward_flops_per_image() + 2.0 * static_cast<double>(m.projector_params()) *
                                                               static_cast<double>(m.encoder.tokens_per_image()));
  // The sum over positions t of forward_flops_per_token(t): a fixed part per token and attention's part per token
  // of context before it.
  const double fixed = m.backbone.forward_flops_per_token(0);
  const double per_context = m.backbone.forward_flops_per_token(1) - fixed;
  const double t = static_cast<double>(c.llm_tokens);
  c.backbone_flops = 3.0 * (t * fixed + per_context * t * (t - 1) / 2);
  return c;
}

}  // namespace clustertwin::models::flowtrain
