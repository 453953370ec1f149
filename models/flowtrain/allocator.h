#pragma once

// FlowTrain's heterogeneous parallel allocator: split N workers between the
// vision encoder and the LLM backbone, and choose each side's parallel
// layout, to maximise the steady-state rate min(R_enc, R_llm) samples/s
// (throughput matching: in a decoupled flow only the two rates must match).
// Exact: every split N_enc = 1..N-1, and on each side every layout that
// fits the device's memory, are evaluated.
//
// A side's rate comes from the cost model of models/flowtrain/timing.h (the
// twin's): the encoder side's groups of TP devices each take a sample in
// kEncoderRecompute x stack_seconds(mean sample's work, TP); a backbone
// replica of TP x PP devices passes one micro-batch per stage time
// (stack_seconds of a stage's share of a micro-batch) in 1F1B's steady
// state, times m / (m + PP - 1) for the fill and drain with m micro-batches
// per replica and step. Monolithic: the first stage also runs the encoder
// for the micro-batch's images, and the slowest stage sets the pace.
//
// Memory per device: bf16
// weights and fp32 gradient accumulation over TP x PP, fp32 master weights
// and Adam moments also over DP (ZeRO-1), activations of the micro-batches
// in flight with selective recomputation and sequence parallelism (34 bytes
// x hidden per token and layer, over TP; 1F1B keeps PP micro-batches of
// layers/PP in flight on the first stage). The encoder runs without
// pipeline stages (PP = 1) and recomputes its forward in backward: a sample
// in flight keeps its layers' inputs (2 bytes x hidden per token and
// layer), one layer's 34 bytes per token live.
//
// Reconstruction: the paper names throughput matching, not its model; the
// constants are assumptions (../shared/papers/flowtrain.md), the twin
// (sim/flowtrain) is what measures a layout.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/flowtrain/timing.h"
#include "models/flowtrain/vlm.h"

namespace clustertwin::models::flowtrain {

struct AllocatorInputs {
  VlmSpec model;
  int workers = 0;
  int devices_per_node = 8;  // TP stays within a node
  DeviceModel device;        // prices the work (timing.h)
  double memory_bytes = 0;   // per device
  /// Per-sample means (over the dataset, or a trace): each side's work, the
  /// model FLOPs (sample_cost), images and backbone tokens.
  StackWork encoder_work, backbone_work;
  double encoder_flops = 0, backbone_flops = 0;
  double images = 0, llm_tokens = 0;
  int global_batch = 4096;             // samples per step
  int64_t micro_batch_tokens = 16384;  // backbone tokens per micro-batch (packed)
  int micro_batch_images = 16;         // encoder images per micro-batch
  int encoder_workers = -1;            // >= 0: force the split (0 is refused)
};

/// One side's layout and what it gives.
struct SideLayout {
  int devices = 0, tp = 1, pp = 1, dp = 1;
  double efficiency = 0;    // model FLOPs per second over devices x peak, at `rate`
  double memory_bytes = 0;  // per device
  double rate = 0;          // samples per second
};

struct Allocation {
  SideLayout encoder, backbone;
  double rate = 0;  // min of the two
  int splits_evaluated = 0;
};

/// Sets in->encoder_work, backbone_work, encoder_flops, backbone_flops,
/// images and llm_tokens to their means over the first `samples` samples of
/// the dataset `options`.
void set_dataset_means(AllocatorInputs* in, const DatasetOptions& options, int samples);

/// The best layout of a side on `devices` devices; rate 0 when none fits.
SideLayout best_encoder_layout(const AllocatorInputs& in, int devices);
SideLayout best_backbone_layout(const AllocatorInputs& in, int devices);

/// Monolithic (Megatron-style, the baseline): one uniform TP x PP x DP over
/// all `devices` for both modules, every worker running the encoder for its
/// own samples on the first pipeline stage (whose memory then also holds the
/// encoder's state and activations). The layout with the best rate under the
/// same efficiency and memory models; rate 0 when none fits.
SideLayout best_monolithic_layout(const AllocatorInputs& in, int devices);

/// InvalidArgument naming the field: fewer than 2 workers, a forced split
/// of 0 or N encoder workers, missing device facts or costs, or no split
/// whose both sides fit the memory.
StatusOr<Allocation> allocate(const AllocatorInputs& in);

}  // namespace clustertwin::models::flowtrain
