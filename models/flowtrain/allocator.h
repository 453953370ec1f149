#pragma once

// FlowTrain's heterogeneous parallel allocator: split N workers between the
// vision encoder and the LLM backbone, and choose each side's parallel
// layout, to maximise the steady-state rate min(R_enc, R_llm) samples/s
// (throughput matching: in a decoupled flow only the two rates must match).
// Exact: every split N_enc = 1..N-1, and on each side every layout that
// fits the device's memory, are evaluated.
//
// A side's rate: devices x peak x efficiency / FLOPs per sample, with
//   efficiency = base x 0.94^log2(TP) x m / (m + PP - 1)
// (tensor parallelism's activation exchange; the pipeline's fill and drain
// with m micro-batches per pipeline and step). Memory per device: bf16
// weights and gradients over TP x PP, fp32 master weights and Adam moments
// also over DP (ZeRO-1), activations of the micro-batches in flight with
// per-layer recomputation (2 bytes x hidden per token and layer kept, one
// layer's 34 x hidden per token live), over TP. The encoder runs without
// pipeline stages (PP = 1).
//
// Reconstruction: the paper names throughput matching, not its model; the
// constants are assumptions (../shared/papers/flowtrain.md), the twin
// (sim/flowtrain) is what measures a layout.

#include <cstdint>
#include <string>
#include <vector>

#include "models/common/status.h"
#include "models/flowtrain/vlm.h"

namespace clustertwin::flowtrain {

struct AllocatorInputs {
  VlmSpec model;
  int workers = 0;
  int devices_per_node = 8;  // TP stays within a node
  double peak_flops = 0;     // per device, bf16
  double memory_bytes = 0;   // per device
  /// Per-sample means (sample_cost over the dataset, or a trace).
  double encoder_flops = 0, backbone_flops = 0;
  double images = 0, llm_tokens = 0;
  int global_batch = 512;              // samples per step
  int64_t micro_batch_tokens = 16384;  // backbone tokens per micro-batch (packed)
  int micro_batch_images = 16;         // encoder images per micro-batch
  double base_efficiency = 0.6;        // of peak, for large dense GEMMs
  int encoder_workers = -1;            // >= 0: force the split (0 is refused)
};

/// One side's layout and what it gives.
struct SideLayout {
  int devices = 0, tp = 1, pp = 1, dp = 1;
  double efficiency = 0;
  double memory_bytes = 0;  // per device
  double rate = 0;          // samples per second
};

struct Allocation {
  SideLayout encoder, backbone;
  double rate = 0;  // min of the two
  int splits_evaluated = 0;
};

/// Sets in->encoder_flops, backbone_flops, images and llm_tokens to their
/// means over the first `samples` samples of the dataset `options`.
void set_dataset_means(AllocatorInputs* in, const DatasetOptions& options, int samples);

/// The best layout of a side on `devices` devices; rate 0 when none fits.
SideLayout best_encoder_layout(const AllocatorInputs& in, int devices);
SideLayout best_backbone_layout(const AllocatorInputs& in, int devices);

/// InvalidArgument naming the field: fewer than 2 workers, a forced split
/// of 0 or N encoder workers, missing device facts or costs, or no split
/// whose both sides fit the memory.
StatusOr<Allocation> allocate(const AllocatorInputs& in);

}  // namespace clustertwin::flowtrain
