#pragma once

// What a transformer's layers cost on one device of a tensor-parallel group,
// compute only: the TP exchanges, pipeline sends and gradient reductions are
// the network's (the twin moves them as collectives). Seconds.
//
//   GEMMs        each of a layer's GEMMs (QKV, output projection, MLP up and
//                down) at its TP shard: 3 x 2 T K N / (peak x e_gemm(6 T K N)),
//                e_gemm the device's curve by a GEMM's training FLOPs (or the
//                constant when no curve was measured)
//   attention    causal scores and values, forward + backward: 3 x 2 s h T / TP
//                / (peak x e_attn(s)) (the kernels skip the masked half)
//   elementwise  kElementwiseBytes x T x h / memory bandwidth, over TP with
//                sequence parallelism (norms, activations, residuals)
//   overhead     layer_overhead_s per layer and pass (launches, what the terms
//                above miss; 0 unless fitted)
//
// T: tokens of the work (micro-batch x sequence). Forward is a third of the
// FLOP terms and half the elementwise, backward the rest (assumption: a
// backward does twice a forward's GEMM FLOPs and reads and writes as much).

#include <cstdint>

#include "models/device/efficiency_curve.h"
#include "models/transformer/transformer.h"

namespace clustertwin::models::transformer {

/// Bytes moved per token, hidden unit and layer by the elementwise kernels of
/// forward and backward (bf16; ~12 tensor passes; assumption).
inline constexpr double kElementwiseBytes = 24;

/// Bytes an Adam step reads and writes per parameter it updates: fp32
/// gradient, master weight, two moments read (16), master and moments
/// written (12), the bf16 weight written (2).
inline constexpr double kAdamBytesPerParameter = 30;

/// What a device's kernels reach.
struct DeviceRates {
  double peak_flops = 0;                    // dense bf16, FLOP/s
  /// The GEMMs' peak when they run in another precision than the rest (fp8: Transformer Engine runs the GEMMs in
  /// fp8, attention and the elementwise kernels in bf16); 0: peak_flops.
  double gemm_peak_flops = 0;
  double memory_bandwidth = 0;              // bytes/s
  device::EfficiencyCurve gemm_curve;       // by one GEMM's training FLOPs; empty: gemm_efficiency
  device::EfficiencyCurve attention_curve;  // causal, by sequence length; empty: attention_efficiency
  /// Without a measured curve: large bf16 GEMMs reach ~75-80% of an H100's dense peak in cuBLAS (assumption:
  /// public GEMM benchmarks), fused attention ~35% (FlashAttention-2) to ~75% (-3) (assumption: the middle).
  double gemm_efficiency = 0.8;
  double attention_efficiency = 0.55;
  double layer_overhead_s = 0;  // per layer and pass
};

struct PassSeconds {
  double forward = 0;
  double backward = 0;
};

/// `layers` layers of `t` over `tokens` tokens on one device of a group of
/// `tp`, with or without sequence parallelism (the elementwise work split
/// over the group).
PassSeconds layer_seconds(const Transformer& t, int64_t layers, double tokens, int tp, bool sequence_parallel,
                          const DeviceRates& device);

/// The attention part of layer_seconds' forward alone (what selective
/// recomputation repeats in backward).
double attention_forward_seconds(const Transformer& t, int64_t layers, double tokens, int tp,
                                 const DeviceRates& device);

/// The LM head's logits GEMM over `tokens` tokens, its vocabulary split over `tp`.
PassSeconds head_seconds(const Transformer& t, double tokens, int tp, const DeviceRates& device);

/// An Adam step over `parameters` parameters: memory-bound.
double adam_seconds(double parameters, const DeviceRates& device);

}  // namespace clustertwin::models::transformer
