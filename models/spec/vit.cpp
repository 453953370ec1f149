#include "models/spec/vit.h"

namespace clustertwin::spec {

int64_t VitSpec::params() const {
  const int64_t h = hidden, f = mlp;
  // Per layer: QKV and output projections with bias, the MLP's two Linears with bias, two LayerNorms.
  const int64_t layer = (4 * h * h + 4 * h) + (2 * h * f + f + h) + 4 * h;
  const int64_t embedding = 3 * patch * patch * h + h + (patches() + 1) * h;  // patch projection, positions
  return layers * layer + embedding;
}

double VitSpec::forward_flops_per_image() const {
  const double n = static_cast<double>(patches()), h = static_cast<double>(hidden), f = static_cast<double>(mlp);
  const double per_layer = 2 * (4 * h * h + 2 * h * f) * n + 4 * h * n * n;
  return static_cast<double>(layers) * per_layer + 2 * (3.0 * static_cast<double>(patch * patch) * h) * n;
}

const std::vector<VitSpec>& vit_specs() {
  // The published configs: InternViT-300M-448px (24 layers, 1024 wide, 16 heads, MLP 4096) and InternViT-6B
  // (48 layers, 3200 wide, 25 heads, MLP 12800); 14-pixel patches of a 448-pixel image.
  static const std::vector<VitSpec> specs = {
      {"300M", 24, 1024, 16, 4096, 14, 448},
      {"6B", 48, 3200, 25, 12800, 14, 448},
  };
  return specs;
}

StatusOr<VitSpec> vit_spec(const std::string& name) {
  std::string known;
  for (const VitSpec& s : vit_specs()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  return Status::not_found("unknown vision encoder '" + name + "' (known: " + known + ")");
}

}  // namespace clustertwin::spec
