#pragma once

// Vision encoder specs at real sizes (InternViT, the encoders of InternVL)
// and what one image costs them. Plain arithmetic: FlowTrain's allocator,
// packer and twin size the encoder side from it.
//
// An image of `image` pixels a side is cut into (image / patch)^2 patches;
// each layer is pre-norm attention (QKV and output projections with bias)
// and a GELU MLP of width `mlp`. After the last layer a pixel shuffle merges
// each 2 x 2 block of patch features into one token of 4 x hidden, which
// the projector (models/flowtrain/vlm.h) maps to the LLM's width: an image
// enters the LLM as patches / 4 tokens.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::spec {

struct VitSpec {
  std::string name;  // "6B"
  int64_t layers = 0, hidden = 0, heads = 0, mlp = 0;
  int64_t patch = 14, image = 448;

  int64_t patches() const { return (image / patch) * (image / patch); }
  /// Tokens an image gives the LLM after the 2 x 2 pixel shuffle.
  int64_t tokens_per_image() const { return patches() / 4; }
  int64_t params() const;
  /// One image's forward FLOPs: 2 per weight per patch, plus 4 x hidden x
  /// patches^2 per layer for the scores and the weighted sum (every patch
  /// attends to every patch).
  double forward_flops_per_image() const;
};

/// The shipped encoders, by name: 300M (InternViT-300M-448px), 6B
/// (InternViT-6B-448px, 48 layers).
const std::vector<VitSpec>& vit_specs();
/// NotFound naming the known encoders.
StatusOr<VitSpec> vit_spec(const std::string& name);

}  // namespace clustertwin::spec
