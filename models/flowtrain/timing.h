#pragma once

// What FlowTrain's pieces cost on a device, in seconds: a transformer
// stack's forward and backward on a tensor-parallel group, and a 1F1B
// pipeline's makespan over micro-batches of unequal cost. Plain C++: the
// twin (sim/flowtrain) prices its work with it.
//
// A stack's compute is models/transformer's (stack_cost.h, the model the LLM
// twin prices its layers with): each GEMM shape at its TP shard, attention
// over each sample's own length (the encoder's full, the backbone's causal),
// the elementwise work over TP (sequence parallelism). On top, the TP
// exchange Megatron-style tensor parallelism adds:
//
//   TP exchange   per layer 4 all-reduce-sized exchanges (2 in forward, 2 in backward) of
//                 tokens x hidden x 2 bytes, ring over the node's links:
//                 2 (TP - 1) / TP x bytes / link bandwidth + 2 (TP - 1) x latency, of which
//                 the share tp_overlap runs under the GEMMs (Transformer Engine's
//                 communication overlap), the rest exposed
//
// Reconstruction (../shared/papers/flowtrain.md names no cost model): the
// efficiencies are stack_cost.h's assumptions unless a device profile's
// curves replace them; the exchange follows from the node's links.

#include <cstdint>
#include <vector>

#include "models/flowtrain/vlm.h"
#include "models/transformer/stack_cost.h"
#include "models/transformer/transformer.h"

namespace clustertwin::models::flowtrain {

/// A device of FlowTrain's cluster: what its kernels reach (the transformer
/// model's rates: peak, memory bandwidth, GEMM and attention efficiencies or
/// measured curves) and the node's links its TP exchanges cross.
struct DeviceModel : transformer::DeviceRates {
  double link_bandwidth = 0;  // bytes/s per direction between two devices of a node
  double link_latency_s = 0;
  /// Share of the TP exchange hidden under GEMMs: Transformer Engine's userbuffer overlap splits the GEMMs into
  /// chunks that overlap the all-gathers and reduce-scatters; NeMo's H100 recipes for 70B models enable it
  /// (assumption: half hidden, as the overlap is imperfect and does not cover every exchange).
  double tp_overlap = 0.5;
};

/// The encoder recomputes its forward in backward (allocator.h), so its time
/// is 4 forwards, 4/3 of its training FLOPs; recomputation is not model FLOPs.
inline constexpr double kEncoderRecompute = 4.0 / 3;

/// A stack's work over a set of samples (models/transformer/stack_cost.h,
/// with its scaled and stage_work).
using StackWork = transformer::StackWork;

/// The encoder side's work for `images` images (the ViT over each image's
/// patches, then the patch embedding's and the projector's GEMMs), and the
/// backbone's for a sequence of `llm_tokens` tokens (attention within the
/// sequence, the LM head). Their FLOPs are sample_cost's model FLOPs but for
/// biases and norms, and attention over s^2 / 2 causal pairs rather than
/// s (s - 1) / 2; the encoder's recomputation comes on top
/// (kEncoderRecompute). `device` prices the attention by sequence length.
StackWork encoder_work(const VlmSpec& model, int images, const DeviceModel& device);
StackWork backbone_work(const VlmSpec& model, int64_t llm_tokens, const DeviceModel& device);

/// Forward plus backward of `work` on a group of `tp` devices, seconds: the
/// stack's compute (sequence parallel) and the exposed share of its TP exchange.
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
