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
//                 (with a measured device profile, both efficiencies come per
//                 shape from its curves instead: see DeviceModel)
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

#include "models/device/efficiency_curve.h"
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
  /// Measured efficiencies per shape (a device profile, models/cluster/device_profile.h, fitted from a kernel
  /// benchmark); when a curve is set it replaces the constant above it, which then prices nothing.
  /// GEMMs: each GEMM shape of the stack at its TP shard and the work's token count, by its training FLOPs
  /// (6 T K N); the stack's GEMM FLOPs at the FLOP-weighted harmonic mean of those shapes' efficiencies
  /// (assumption: the GEMMs not listed per shape, the encoder's projector and patch embedding, run at that mean).
  device::EfficiencyCurve gemm_curve;
  /// Causal attention by each sequence's length (the backbone's samples; packing masks across samples).
  device::EfficiencyCurve attention_curve;
  /// Full attention by sequence length (the encoder's images); when empty, attention_curve
  /// (assumption: the benchmark measured causal attention only; a full kernel over a sequence does the
  /// causal one's work twice, at a similar share of peak).
  device::EfficiencyCurve attention_full_curve;
};

/// A GEMM of a stack at TP 1: `in` x `out` weights applied to every token,
/// `count` times in the stack (per layer: the layer count); tensor
/// parallelism splits `out` (column-parallel) or `in` (row-parallel).
struct StackGemm {
  double in = 0, out = 0, count = 0;
  bool split_out = true;
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
  /// attention_flops, each sequence's over the attention efficiency at its length: the FLOPs a device at its
  /// peak would do in the attention's time (what a device profile's curve prices; additive over samples).
  double attention_effective_flops = 0;
  double tokens = 0;
  int64_t layers = 0, hidden = 0;
  std::vector<StackGemm> gemms;  // the stack's GEMM shapes (the same for every sample)
  StackWork& operator+=(const StackWork& o) {
    gemm_flops += o.gemm_flops;
    attention_flops += o.attention_flops;
    attention_effective_flops += o.attention_effective_flops;
    tokens += o.tokens;
    if (gemms.empty()) gemms = o.gemms;
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
/// (kEncoderRecompute). `device` prices the attention by sequence length
/// (attention_effective_flops).
StackWork encoder_work(const VlmSpec& model, int images, const DeviceModel& device);
StackWork backbone_work(const VlmSpec& model, int64_t llm_tokens, const DeviceModel& device);

/// The share of peak `work`'s GEMMs reach on a group of `tp` devices: the
/// constant gemm_efficiency, or with a gemm_curve the FLOP-weighted harmonic
/// mean over work.gemms of the curve at each shape (work.tokens x in/TP x out
/// or in x out/TP).
double gemm_efficiency(const StackWork& work, int tp, const DeviceModel& device);
/// The share of peak attention over one sequence of `seq_len` tokens reaches:
/// the constant attention_efficiency, or the curve's (full: attention_full_curve
/// when set).
double attention_efficiency(double seq_len, bool causal, const DeviceModel& device);

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
