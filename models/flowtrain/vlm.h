#pragma once

// FlowTrain's vision-language models at real sizes (a vision encoder, a
// projector, an LLM backbone) and its synthetic multimodal dataset: each
// sample carries 0-8 images and a heavy-tailed text, so the encoder's cost
// (images) and the backbone's (text plus image tokens, with attention's
// square) vary independently. Plain C++: the allocator, the packer, the
// twin and the real executor's sizing all read it.
//
// Reconstruction (../shared/papers/flowtrain.md gives only the abstract):
// the models are InternVL-style (InternViT, a 2-layer MLP projector after a
// 2 x 2 pixel shuffle, a Qwen2.5 backbone); the dataset's mixture is ours,
// chosen to resemble interleaved image-text pretraining data.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/spec/llm.h"
#include "models/spec/vit.h"

namespace clustertwin::models::flowtrain {

struct VlmSpec {
  std::string name;  // "6B+72B"
  spec::VitSpec encoder;
  spec::LlmSpec backbone;

  /// The projector: LayerNorm(4 h_v), Linear(4 h_v -> h), GELU, Linear(h -> h).
  int64_t projector_params() const;
  int64_t params() const { return encoder.params() + projector_params() + backbone.params(); }
};

/// "ENCODER+BACKBONE" from the shipped sizes, e.g. 6B+72B or 300M+7B;
/// InvalidArgument naming the part that is unknown.
StatusOr<VlmSpec> vlm_spec(const std::string& name);

/// One training sample.
struct Sample {
  int64_t id = 0;
  int images = 0;           // 0..8
  int64_t text_tokens = 0;  // heavy-tailed
};

struct DatasetOptions {
  uint64_t seed = 0;
  double text_median = 384;  // tokens
  double text_sigma = 1.0;   // log-normal spread
  int64_t max_text = 8192;
};

/// Sample `id` of the dataset: the same id and options, the same sample.
/// Images: 0 with probability 0.25, 1 with 0.35, then 2..8 with 0.12, 0.08,
/// 0.06, 0.05, 0.04, 0.03, 0.02. Text: log-normal, clamped to [16, max_text].
Sample dataset_sample(const DatasetOptions& options, int64_t id);

/// What one sample costs in training (forward and backward: 3x forward).
struct SampleCost {
  int64_t llm_tokens = 0;     // text plus images x tokens per image
  double encoder_flops = 0;   // the encoder and the projector
  double backbone_flops = 0;  // the LLM, attention within the sample only (packing masks across samples)
};
SampleCost sample_cost(const VlmSpec& model, const Sample& sample);

}  // namespace clustertwin::models::flowtrain
