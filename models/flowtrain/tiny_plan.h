#pragma once

// What `run flowtrain` does in a step, in plain C++: the tiny VLM's samples
// (their sizes and model FLOPs), the step's micro-batches and the static
// assignment of work to ranks. The real executor (real/flowtrain) and its
// process twin (sim/flowtrain/process_twin.h) both follow it, so the twin
// replays the executor's schedule, not a look-alike.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/flowtrain/vlm.h"

namespace clustertwin::models::flowtrain {

/// The tiny VLM's sizes (real/flowtrain/tiny_vlm.h's options and parameter
/// counts), what sizes and FLOPs need.
struct TinyFacts {
  int64_t tokens_per_image = 16, max_images = 8, context = 256;
  int64_t patch = 4;  // pixels per image token: patch x patch, in 3 channels
  double text_scale = 1.0 / 16;
  double encoder_params = 0;   // every encoder-side parameter
  double backbone_params = 0;  // backbone parameters less the embeddings (lookups)
  int64_t d_vision = 32, enc_layers = 2, d_model = 48, layers = 2, vocab = 64;
};

struct TinySample {
  int64_t id = 0;
  int images = 0;
  int64_t text = 0;
  int64_t tokens = 0;  // backbone tokens: images x tokens_per_image + text
  double encoder_flops = 0, backbone_flops = 0;
};

/// Sample `id` of the dataset with `seed`: images = min(dataset_sample's,
/// max_images), text = clamp(round(its text x text_scale), 2, context -
/// images x tokens_per_image). Model FLOPs of training (as
/// ../shared/papers/flowtrain.md counts them): 6 x parameters x tokens, plus
/// attention: 12 x d_vision x n^2 per encoder layer and image (n patches,
/// bidirectional), 6 x d_model x t^2 per backbone layer (causal).
TinySample tiny_sample(const TinyFacts& facts, uint64_t seed, int64_t id);

/// The bytes of a sample's tensors (float pixels of 3-channel square images
/// of tokens_per_image patches of patch x patch, int64 text): a data
/// loader's size.
int64_t tiny_sample_bytes(const TinyFacts& facts, const TinySample& sample);

/// The step's samples: ids step x batch .. (step + 1) x batch - 1.
std::vector<TinySample> tiny_step(const TinyFacts& facts, uint64_t seed, int step, int batch);

/// The split modes' static assignment: micro-batch j to backbone rank E + j
/// mod B (MicroBatchDispatch's round-robin, models/flowtrain/dispatch.h; the
/// cluster twin takes first-ready); the step's image samples, in micro-batch
/// order, to encoder rank q mod E.
struct StepPlan {
  std::vector<std::vector<int64_t>> bins;  // sample indices per micro-batch
  std::vector<int> backbone_of;            // per sample
  std::vector<int> encoder_of;             // per sample, -1 without images
  std::vector<int> order;                  // image samples in micro-batch order
};

/// Packs the step into a multiple of `backbones` micro-batches of at most
/// `capacity` tokens: by backbone cost with image-heavy micro-batches first
/// (`by_cost`, flowtrain), or by tokens (disagg-sync); then assigns.
StatusOr<StepPlan> plan_step(const std::vector<TinySample>& samples, int encoders, int backbones, int64_t capacity,
                             bool by_cost);

}  // namespace clustertwin::models::flowtrain
