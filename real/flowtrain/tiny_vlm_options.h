#pragma once

// The shapes of the VLM that `run flowtrain` trains (tiny_vlm.h builds it):
// the options, their check, the named presets and the parameter counts the
// options imply. No torch here, so that the presets and counts can be read
// without building a model (a large one takes gigabytes).
//
//   preset  encoder (ViT)                          backbone (decoder)                          context  images
//   tiny    16 px / 4, d 32, 2 layers, 2 heads,    d 48, 2 layers, 4 heads, MLP 192, vocab 64   256      <= 8
//           MLP 128 (31,488 parameters)            (75,136 parameters)
//   large   224 px / 14, d 1024, 24 layers, 16     d 2048, 22 layers, 16 heads, MLP 8192,       2048     <= 4
//           heads, MLP 4096: ViT-L/14 (~310 M)     vocab 32000 (~1.24 B)

#include <cstdint>
#include <string>

#include "common/status.h"

namespace clustertwin::real::flowtrain {

struct TinyVlmOptions {
  // Encoder side.
  int64_t channels = 3;
  int64_t image_size = 16;  // square images
  int64_t patch = 4;        // P = (image_size / patch)^2 = 16 tokens per image
  int64_t d_vision = 32;
  int64_t enc_layers = 2;
  int64_t enc_heads = 2;
  int64_t d_vision_ff = 128;
  // Backbone side.
  int64_t vocab = 64;
  int64_t d_model = 48;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t d_ff = 192;
  int64_t max_images = 8;  // per sample
  int64_t context = 256;   // the backbone's longest sequence: image tokens plus text
  // The synthetic dataset's text lengths (models/flowtrain/vlm.h: median 384 tokens) times this: 1/16 fits the
  // tiny context (a median of 24 tokens), 1 is the dataset's own lengths.
  double text_scale = 1.0 / 16;

  int64_t tokens_per_image() const { return (image_size / patch) * (image_size / patch); }
};

/// One line naming the first bad field ("patch 5 must divide image_size 16",
/// "context 100 must be >= max_images 8 x 16 tokens per image + 2"), or ok.
Status check_tiny_vlm_options(const TinyVlmOptions& options);

/// The names tiny_vlm_preset knows, as its error lists them: "tiny, large".
const char* tiny_vlm_preset_names();

/// The options of preset `name` (the table above): "tiny" is TinyVlmOptions{}, "large" a ViT-L/14 encoder and a
/// ~1.2 B decoder for one 80-140 GB GPU, with the dataset's own text lengths. InvalidArgument naming the value and
/// the allowed names ("model 'huge': unknown (allowed: tiny, large)") otherwise.
StatusOr<TinyVlmOptions> tiny_vlm_preset(const std::string& name);

/// Parameter counts of a model with these options: every parameter of the encoder side (patch embedding,
/// positions, blocks, norm, projector) and of the backbone side (token and position embeddings, blocks, final
/// norm, head).
struct TinyVlmParameterCounts {
  int64_t encoder = 0;
  int64_t backbone = 0;
  int64_t total() const { return encoder + backbone; }
};
TinyVlmParameterCounts tiny_vlm_parameter_counts(const TinyVlmOptions& options);

}  // namespace clustertwin::real::flowtrain
