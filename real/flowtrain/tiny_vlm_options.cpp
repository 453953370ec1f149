#include "real/flowtrain/tiny_vlm_options.h"

#include <utility>

#include "common/json_number.h"

namespace clustertwin::real::flowtrain {
namespace {

Status bad_option(const std::string& what) {
  return Status::invalid_argument(what);
}

std::string decimal(int64_t v) {
  return std::to_string(v);
}

// A pre-norm block (tiny_vlm.h's TinyVlmBlockImpl) of width d: two LayerNorms (weight and bias), qkv d -> 3d,
// out d -> d, fc1 d -> d_ff, fc2 d_ff -> d, every Linear with its bias.
int64_t block_parameters(int64_t d, int64_t d_ff) {
  return 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * d_ff + d_ff) + (d_ff * d + d);
}

// The large preset: a ViT-L/14 encoder (CLIP's: 224 px, 14 px patches, 24 layers of width 1024, 16 heads, MLP
// 4096) and a decoder of TinyLlama's depth and width (22 layers, d 2048, 16 heads, context 2048, vocab 32000) with
// this block's GELU MLP at 4 d. Up to 4 images (1,024 image tokens) leave at least 1,024 tokens of text, where the
// dataset's texts (median 384) fit unscaled.
TinyVlmOptions large_preset() {
  TinyVlmOptions o;
  o.image_size = 224;
  o.patch = 14;
  o.d_vision = 1024;
  o.enc_layers = 24;
  o.enc_heads = 16;
  o.d_vision_ff = 4096;
  o.vocab = 32000;
  o.d_model = 2048;
  o.layers = 22;
  o.heads = 16;
  o.d_ff = 8192;
  o.max_images = 4;
  o.context = 2048;
  o.text_scale = 1.0;
  return o;
}

}  // namespace

Status check_tiny_vlm_options(const TinyVlmOptions& o) {
  const std::pair<const char*, int64_t> positive[] = {
      {"channels", o.channels},       {"image_size", o.image_size}, {"patch", o.patch},
      {"d_vision", o.d_vision},       {"enc_layers", o.enc_layers}, {"enc_heads", o.enc_heads},
      {"d_vision_ff", o.d_vision_ff}, {"vocab", o.vocab},           {"d_model", o.d_model},
      {"layers", o.layers},           {"heads", o.heads},           {"d_ff", o.d_ff},
      {"context", o.context}};
  for (const auto& [name, value] : positive) {
    if (value < 1 || value > (int64_t{1} << 24)) {
      return bad_option(std::string(name) + " " + decimal(value) + " must be in [1, 2^24]");
    }
  }
  if (o.max_images < 0 || o.max_images > 1024) {
    return bad_option("max_images " + decimal(o.max_images) + " must be in [0, 1024]");
  }
  if (!(o.text_scale > 0 && o.text_scale <= 1024)) {
    return bad_option("text_scale " + json_number(o.text_scale) + " must be in (0, 1024]");
  }
  if (o.image_size % o.patch != 0) {
    return bad_option("patch " + decimal(o.patch) + " must divide image_size " + decimal(o.image_size));
  }
  if (o.d_vision % o.enc_heads != 0) {
    return bad_option("enc_heads " + decimal(o.enc_heads) + " must divide d_vision " + decimal(o.d_vision));
  }
  if (o.d_model % o.heads != 0) {
    return bad_option("heads " + decimal(o.heads) + " must divide d_model " + decimal(o.d_model));
  }
  // Every sample, even one with the most images, keeps room for two text tokens (one prediction without images).
  const int64_t longest_images = o.max_images * o.tokens_per_image();
  if (o.context < longest_images + 2) {
    return bad_option("context " + decimal(o.context) + " must be >= max_images " + decimal(o.max_images) + " x " +
                      decimal(o.tokens_per_image()) + " tokens per image + 2 = " + decimal(longest_images + 2));
  }
  return Status::ok();
}

const char* tiny_vlm_preset_names() {
  return "tiny, large";
}

StatusOr<TinyVlmOptions> tiny_vlm_preset(const std::string& name) {
  if (name == "tiny") return TinyVlmOptions{};
  if (name == "large") return large_preset();
  return Status::invalid_argument("model '" + name + "': unknown (allowed: " + tiny_vlm_preset_names() + ")");
}

TinyVlmParameterCounts tiny_vlm_parameter_counts(const TinyVlmOptions& o) {
  TinyVlmParameterCounts n;
  const int64_t patch = o.channels * o.patch * o.patch * o.d_vision + o.d_vision;  // Conv2d with its bias
  const int64_t projector = (o.d_vision * o.d_model + o.d_model) + (o.d_model * o.d_model + o.d_model);
  n.encoder = patch + o.tokens_per_image() * o.d_vision + o.enc_layers * block_parameters(o.d_vision, o.d_vision_ff) +
              2 * o.d_vision + projector;
  const int64_t embeddings = o.vocab * o.d_model + o.context * o.d_model;
  const int64_t head = o.d_model * o.vocab + o.vocab;
  n.backbone = embeddings + o.layers * block_parameters(o.d_model, o.d_ff) + 2 * o.d_model + head;
  return n;
}

}  // namespace clustertwin::real::flowtrain
