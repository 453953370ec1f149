#pragma once

// What FlowTrain's pieces cost on a device, in seconds: a transformer
// stack's forward and backward on a tensor-parallel group, and a 1F1B
// pipeline's makespan over micro-batches of unequal cost. Plain C++: the
// twin (sim/flowtrain) prices its work with it.
//
// A stack's forward plus backward on a group of TP devices (Megatron-style
// tensor parallelism with sequence parallelism):
//
//   GEMMs         gemm_flops / (TP x peak x gemm_efficiency)
//   attention     attention_flops / (TP x peak x attention_efficiency)
//   elementwise   kElementwiseBytes x tokens x hidden x layers / (TP x memory bandwidth)
//                 (norms, activations, residuals, rotary: read and written in forward and backward)
//   TP exchange   per layer 4 all-reduce-sized exchanges (2 in forward, 2 in backward) of
//                 tokens x hidden x 2 bytes, ring over the node's links:
//                 2 (TP - 1) / TP x bytes / link bandwidth + 2 (TP - 1) x latency, of which
//                 the share tp_overlap runs under the GEMMs (Transformer Engine's
//                 communication overlap), the rest exposed
//
// Reconstruction (../shared/papers/flowtrain.md names no cost model): the
// efficiencies are assumptions written next to their defaults; the
// exchange and elementwise terms follow from the device's bandwidths.

#include <cstdint>
#include <vector>

#include "models/flowtrain/vlm.h"

namespace clustertwin::models::flowtrain {

struct DeviceModel {
  double peak_flops = 0;        // per device, bf16 dense
  double memory_bandwidth = 0;  // bytes/s
  double link_bandwidth = 0;    // bytes/s per direction between two devices of a node
  double link_latency_s = 0;
  /// Large bf16 GEMMs: cuBLAS reaches ~75-80% of an H100's dense peak (assumption: public GEMM benchmarks).
  double gemm_efficiency = 0.8;
  /// Fused attention kernels: FlashAttention-2 ~35%, -3 ~75% of an H100's peak (assumption: the middle).
  double attention_efficiency = 0.55;
  /// Share of the TP exchange hidden under GEMMs: Transformer Engine's userbuffer overlap splits the GEMMs into
  /// chunks that overlap the all-gathers and reduce-scatters; NeMo's H100 recipes for 70B models enable it
  /// (assumption: half hidden, as the overlap is imperfect and does not cover every exchange).
  double tp_overlap = 0.5;
};

/// The encoder recomputes its forward in backward (allocator.h), so its time
/// is 4 forwards, 4/3 of its training FLOPs; recomputation is not model FLOPs.
inline constexpr double kEncoderRecompute = 4.0 / 3;

/// Bytes moved per token, hidden unit and layer by the elementwise kernels
/// of forward and backward (bf16; ~12 tensor passes).
inline constexpr double kElementwiseBytes = 24;

/// The work of a stack: what a set of sequences costs, additive over samples.
struct StackWork {
  double gemm_flops = 0;       // training (3 x forward)
  double attention_flops = 0;  // training (3 x forward)
  double tokens = 0;
  int64_t layers = 0, hidden = 0;
  StackWork& operator+=(const StackWork& o) {
    gemm_flops += o.gemm_flops;
    attention_flops += o.attention_flops;
    tokens += o.tokens;
    return *this;
  }
};

/// `w` times `factor` (a mean over samples, a share of a batch).
StackWork scaled(StackWork w, double factor);
/// One of `stages` equal pipeline stages of `w`: its layers and FLOPs over `stages`.
StackWork stage_work(StackWork w, int stages);

/// The encoder side's work for `images` images (ViT, then the projector on the
/// shuffled tokens), and the backbone's for a sequence of `llm_tokens` tokens
/// (attention within the sequence). Training FLOPs, equal to sample_cost's
/// split (model FLOPs); the encoder's recomputation comes on top
/// (kEncoderRecompute).
StackWork encoder_work(const VlmSpec& model, int images);
StackWork backbone_work(const VlmSpec& model, int64_t llm_tokens);

/// Forward plus backward of `work` on a group of `tp` devices, seconds.
double stack_seconds(const StackWork& work, int tp, const DeviceModel& device);

/// The exchange part of stack_seconds alone (0 for TP 1).
double tp_exchange_seconds(const StackWork& work, int tp, const DeviceModel& device);

/// A pipeline of stages over micro-batches: forward[j][s] and backward[j][s]
/// are micro-batch j's times on stage s. Each stage runs the 1F1B order
/// (min(stages - s - 1, m) forwards, then one forward and one backward
/// alternately, then the remaining backwards); a forward waits for the
/// previous stage's forward of the same micro-batch, a backward for the next
/// stage's backward (the last stage's for its own forward). Returns when the
/// last backward ends, starting at 0. One stage: the sum of all times.
double pipeline_makespan(const std::vector<std::vector<double>>& forward,
                         const std::vector<std::vector<double>>& backward);

}  // namespace clustertwin::models::flowtrain
