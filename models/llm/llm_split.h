#pragma once

// How an LLM training step is split over GPUs (tensor, pipeline and data
// parallelism, Megatron-LM's), its checks, and its memory on one GPU. Plain
// C++: the LLM twin (sim/llm) builds its step plan from it.
//
// Ranks are laid out as Megatron-LM's default order (tp fastest, pp slowest):
//
//   rank = t + TP x (d + DP x p)      t < TP, d < DP, p < PP
//
// so a tensor-parallel group is a block of TP consecutive ranks (one node's
// NVLink domain when TP <= GPUs per node), a pipeline stage is the block of
// TP x DP ranks starting at p x TP x DP, and a data-parallel group is every
// TP-th rank of its stage (models::GroupSpec stride(TP) within TP x DP).
//
// Memory of a GPU of the first stage (the one holding the most activations),
// bytes (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", eqs. 1-2 and Table 2; Megatron-LM's distributed
// optimizer documentation for the per-parameter bytes):
//
//   weights       2 x parameters on the GPU (bf16 or fp16)
//   gradients     4 x parameters (fp32 main gradients; 2 x with grad_reduce bf16)
//   optimizer     12 x parameters (fp32 master weights, Adam's two moments);
//                 12 / DP x parameters with zero 1 (the distributed optimizer)
//   activations   per layer and micro-batch of b sequences (s tokens, h
//                 hidden, a heads, TP t):
//                   none, sequence parallel    s b h (34 + 5 a s / h) / t
//                   none, without it           s b h (10 + 24 / t + 5 a s / (h t))
//                   selective                  the same without the 5 a s / h terms
//                   (fused attention, the default, keeps no scores: none as selective)
//                   full                       2 s b h (/ t with sequence parallelism),
//                                              plus one layer's full set while it is recomputed
//                 times the layers of a stage and the micro-batches in
//                 flight on the first stage: min(PP, M) with 1F1B, M with
//                 GPipe, min(PP, M) (1 + (PP - 1) / (PP x V)) interleaved.
//
// Parameters on a GPU: the stage's layers over TP, plus the (vocabulary-
// parallel) embedding over TP on the first stage (chunk_parameters).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "models/transformer/transformer.h"

namespace clustertwin::models::llm {

enum class Schedule { kOneFOneB, kInterleaved, kGpipe };
enum class Recompute { kNone, kSelective, kFull };

std::string_view schedule_name(Schedule s);  // "1f1b", "interleaved", "gpipe"
std::optional<Schedule> schedule_from_name(std::string_view name);
std::string_view recompute_name(Recompute r);  // "none", "selective", "full"
std::optional<Recompute> recompute_from_name(std::string_view name);

struct Split {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int64_t micro_batch = 1;   // sequences per micro-batch
  int64_t global_batch = 1;  // sequences per step
  Schedule schedule = Schedule::kOneFOneB;
  int virtual_stages = 1;  // chunks per pipeline stage (interleaved)
  Recompute recompute = Recompute::kFull;
  int zero = 0;  // 1: the distributed optimizer (optimizer state sharded over DP)
  bool sequence_parallel = false;
  /// Data-parallel gradient reductions in buckets during the last micro-batch's
  /// backward (Megatron's --overlap-grad-reduce); false: one reduction after it.
  bool overlap_grad_reduce = true;
  /// bf16 or fp16; fp8: the GEMMs in fp8 (Transformer Engine), the rest and the weights kept in bf16
  std::string precision = "bf16";
  /// Fused attention kernels that keep no s x s scores for backward (FlashAttention, cuDNN's: what
  /// Megatron-core and NeMo run); false: Korthikanti et al.'s unfused attention, its 5 a s / h term.
  bool fused_attention = true;
  /// The gradients as kept and reduced over data parallelism: fp32 (Megatron-LM's main gradients with bf16)
  /// or bf16 (NeMo's grad_reduce_in_fp32: false): 4 or 2 bytes a parameter.
  std::string grad_reduce = "fp32";
};

/// Bytes of one parameter's gradient: 4 for grad_reduce fp32, 2 for bf16.
double gradient_bytes(const Split& split);

/// Micro-batches per step and pipeline: global_batch / (micro_batch x dp).
int64_t micro_batches(const Split& split);
/// Layers of one chunk (a stage's layers over its virtual stages).
int64_t chunk_layers(const transformer::Transformer& model, const Split& split);

/// Checks the model and its split over `workers` GPUs. InvalidArgument naming
/// the field and its value (tp, pp, dp, micro_batch, global_batch, heads,
/// kv_heads, layers, virtual_stages, zero, precision, hidden, seq, vocab, ffn).
Status check_split(const transformer::Transformer& model, const Split& split, int workers);

struct GpuMemory {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0;  // bytes
  double total() const { return weights + gradients + optimizer + activations; }
};

/// Parameters a GPU holds of virtual stage `virtual_stage` (0 to PP x V - 1):
/// the chunk's layers over TP, plus the token and position embeddings on the
/// first and, with PP > 1, the LM head's copy of the token embedding on the
/// last (Megatron-LM keeps one there for the tied output layer).
double chunk_parameters(const transformer::Transformer& model, const Split& split, int virtual_stage);
/// Parameters a GPU of pipeline stage `stage` holds: its chunks'.
double stage_parameters(const transformer::Transformer& model, const Split& split, int stage);
/// Activation bytes of one layer for one micro-batch (the table above).
double layer_activation_bytes(const transformer::Transformer& model, const Split& split);
/// The first stage's GPU's memory.
GpuMemory gpu_memory(const transformer::Transformer& model, const Split& split);

}  // namespace clustertwin::models::llm
