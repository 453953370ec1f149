#pragma once

// What a transformer's layers cost on one device of a tensor-parallel group,
// compute only: the TP exchanges, pipeline sends and gradient reductions are
// the network's (the twins move or price them apart). Seconds. The one cost
// model of a transformer stack: the LLM twin's layers, FlowTrain's encoder
// and backbone and FlexMARL's trainer are priced here.
//
//   GEMMs        each of a layer's GEMMs (QKV, output projection, MLP up and
//                down) at its TP shard: 3 x 2 T K N / (peak x e_gemm(6 T K N)),
//                e_gemm the device's curve by a GEMM's training FLOPs (or the
//                constant when no curve was measured)
//   attention    scores and values, forward + backward, over each sequence of
//                s tokens: 3 x 2 s h T / TP / (peak x e_attn(s)) when causal
//                (the kernels skip the masked half), twice that when full
//   elementwise  kElementwiseBytes x T x h / memory bandwidth, over TP with
//                sequence parallelism (norms, activations, residuals)
//   overhead     layer_overhead_s per layer and pass (launches, what the terms
//                above miss; 0 unless fitted)
//
// T: tokens of the work (micro-batch x sequence). Forward is a third of the
// FLOP terms and half the elementwise, backward the rest (assumption: a
// backward does twice a forward's GEMM FLOPs and reads and writes as much).
//
// Two ways to ask: layer_seconds for layers over sequences of one length (the
// LLM twin), StackWork for a set of sequences of different lengths, summed
// sample by sample and priced once on a group (FlowTrain's packed
// micro-batches, FlexMARL's responses).

#include <cstdint>
#include <vector>

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
  double peak_flops = 0;  // dense bf16, FLOP/s
  /// The GEMMs' peak when they run in another precision than the rest (fp8: Transformer Engine runs the GEMMs in
  /// fp8, attention and the elementwise kernels in bf16); 0: peak_flops.
  double gemm_peak_flops = 0;
  double memory_bandwidth = 0;              // bytes/s
  device::EfficiencyCurve gemm_curve;       // by one GEMM's training FLOPs; empty: gemm_efficiency
  device::EfficiencyCurve attention_curve;  // causal, by sequence length; empty: attention_efficiency
  /// Full (non-causal) attention by sequence length (a vision encoder's patches); empty: attention_curve
  /// (assumption: a benchmark that measured causal attention only; a full kernel over a sequence does the causal
  /// one's work twice, at a similar share of peak).
  device::EfficiencyCurve attention_full_curve;
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

/// One GEMM shape of a stack at TP 1: `in` x `out` weights applied to a
/// `token_share` of the work's tokens, `count` times (a layer's GEMMs: the
/// layer count); tensor parallelism splits `out` (column-parallel) or `in`
/// (row-parallel).
struct Gemm {
  double in = 0, out = 0, count = 1;
  bool split_out = true;
  double token_share = 1;  // a vision projector after a 4:1 pixel shuffle: 1/4
};

/// One layer's GEMMs, count 1 each: QKV, the output projection, the MLP's up
/// (gate and up when gated) and down.
std::vector<Gemm> layer_gemms(const Transformer& t);
/// The LM head: h x V, its vocabulary split over TP.
Gemm head_gemm(const Transformer& t);

/// Forward + backward of `g` over `tokens` tokens on one device of a group of
/// `tp` (count times).
double gemm_seconds(double tokens, const Gemm& g, int tp, const DeviceRates& device);

/// The share of peak attention over one sequence of `seq_len` tokens reaches:
/// the constant, or the measured curve (full attention: attention_full_curve
/// when set).
double attention_efficiency(double seq_len, bool causal, const DeviceRates& device);

/// Forward + backward FLOPs of one layer's attention over `tokens` tokens in
/// sequences of `seq_len`, at TP 1: 3 x 2 s h T causal, twice that full.
double attention_flops(const Transformer& t, double seq_len, double tokens, bool causal);

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

/// A stack's work over a set of sequences, additive over sequences: summed
/// sample by sample, scaled to a share of a batch, cut into pipeline stages,
/// then priced on a group (stack_seconds).
struct StackWork {
  double tokens = 0;
  int64_t layers = 0, hidden = 0;  // for the elementwise term (and a caller's TP exchange)
  std::vector<Gemm> gemms;         // the stack's shapes, counts included (the same for every sequence)
  double attention_flops = 0;      // training, TP 1, summed over sequences
  /// attention_flops, each sequence's over the attention efficiency at its length: what a device at its peak
  /// would do in the attention's time.
  double attention_effective_flops = 0;
  StackWork& operator+=(const StackWork& o);
  /// Training FLOPs of the GEMMs and the attention (TP 1).
  double flops() const;
};

/// `t`'s layers (and its LM head when t.vocab > 0) over one sequence of
/// `seq_len` tokens; attention causal or full. `device` prices the attention
/// by the sequence's length.
StackWork sequence_work(const Transformer& t, double seq_len, bool causal, const DeviceRates& device);
/// `w` times `factor` (a mean over samples, a share of a batch).
StackWork scaled(StackWork w, double factor);
/// One of `stages` equal pipeline stages of `w`: its GEMM counts and attention
/// over `stages`, layers the whole ones (at least 1).
StackWork stage_work(StackWork w, int stages);

/// Forward and backward of `w` on one device of a group of `tp` (its
/// elementwise work split over the group with sequence parallelism), with
/// layer_overhead_s per layer and pass; forward a third of the FLOP terms and
/// half the elementwise, as layer_seconds.
PassSeconds stack_passes(const StackWork& w, int tp, bool sequence_parallel, const DeviceRates& device);
/// Their sum.
double stack_seconds(const StackWork& w, int tp, bool sequence_parallel, const DeviceRates& device);

}  // namespace clustertwin::models::transformer
