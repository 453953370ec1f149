#pragma once

// The frameworks the FlexMARL study compares, how each places agents on the
// devices, and what each piece of work costs on one device type. Plain C++:
// the twin (sim/flexmarl) and the real executor both read it.
//
//   sync                MAS-RL-like, colocated: each agent's rollout engine
//                       spans every device and is loaded from host memory
//                       when its phase starts; agents answer one after
//                       another (a turn's branches too) with a barrier after
//                       each; then each agent in turn trains on every device
//                       (its state swapped in and out)
//   marti               MARTI-like: rollout pool and training pool apart;
//                       the agents of a turn answer together, a barrier after
//                       each turn; each agent trains its whole batch after the
//                       last turn; publish
//   flexmarl            disaggregated; each sample's next turn starts when its
//                       inputs are done (intra-query parallelism); hierarchical
//                       load balancing; a micro-batch trains as soon as its
//                       groups are rewarded, the optimizer step and the
//                       publish wait for the whole batch (on-policy)
//   flexmarl-nobalance  flexmarl with round-robin dispatch and a fixed, equal
//                       split of rollout instances between agents
//   flexmarl-noasync    flexmarl where an agent trains only once its whole
//                       global batch is rolled out
//
// The placement rules and cost formulas are our reconstruction
// (../shared/papers/flexmarl.md gives the setup, not the rules); each
// assumption is named where it is made.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "models/flexmarl/workload.h"
#include "models/spec/llm.h"
#include "models/transformer/stack_cost.h"

namespace clustertwin::models::flexmarl {

enum class Framework { kSync, kMarti, kFlexMarl, kNoBalance, kNoAsync };

std::string_view framework_name(Framework framework);  // "sync", "marti", "flexmarl", "flexmarl-nobalance", ...
std::optional<Framework> framework_from_name(std::string_view name);
/// Every framework, in the order above.
const std::vector<Framework>& all_frameworks();
/// A comma-separated list ("sync,flexmarl" or "all"); InvalidArgument naming the unknown entry.
StatusOr<std::vector<Framework>> parse_frameworks(const std::string& text);

/// Disaggregated (rollout pool apart from the training pool).
bool disaggregated(Framework framework);

/// What the cost formulas need of a device (models/flexmarl stays free of
/// the twin's profile type): what its kernels reach (the transformer model's
/// rates, which price the trainer: peak, memory bandwidth, GEMM and attention
/// efficiencies), its memory and its node.
struct DeviceFacts : transformer::DeviceRates {
  double memory_bytes = 0;    // capacity
  double link_latency_s = 0;  // between two devices of a node (a tensor-parallel exchange's hop)
  int devices_per_node = 1;   // the widest tensor-parallel group (TP stays inside a node)
};

/// The efficiencies that turn datasheet figures into times.
struct EngineEfficiency {
  /// Share of memory bandwidth a decode iteration reaches in the engines of
  /// flexmarl, its ablations and marti (production inference engines).
  /// Measured, never defaulted: the callers take a device profile's
  /// decode_bandwidth_share (sim/flexmarl's engine_decode_efficiency; the
  /// shipped h200 profile: a 14B-like decode token on an H200 with torch 2.11
  /// eager, 0.735) or the user's --decode-efficiency; 0 (unset) is refused.
  /// Assumption: an NPU's engine reaches the same share of its own bandwidth.
  double decode = 0;
  /// The same share for MAS-RL's engine (sync): the one fitted figure, so
  /// that sync takes the paper's 914.4 s per step on the MA workload.
  double sync_decode = 0.5;
  /// Assumption: prefill reaches 40% of peak, a usual MFU for dense models
  /// of this size on large clusters. (Training is priced by the transformer
  /// model: train_s.)
  double prefill = 0.4;
};
/// The efficiencies `framework`'s engines run at (sync's decode is its own).
EngineEfficiency engine_efficiency(const EngineEfficiency& efficiency, Framework framework);

/// Tensor parallelism of one inference instance: among the powers of two up
/// to a node that leave half of each device for the KV cache (assumption),
/// the one whose decode token is fastest at full bandwidth (a rollout's end is
/// its longest response, token after token: latency-bound, so a wider group
/// reads its weights sooner until the per-layer exchanges cost more than they
/// save; ties go to the narrower group).
int inference_tp(const spec::LlmSpec& model, const DeviceFacts& device);
/// The tensor-parallel exchanges of one decode iteration on `tp` devices: two
/// all-reduces per layer (after attention and after the MLP, Megatron style)
/// of a few KB each, latency-bound: a ring's 2 (tp - 1) hops of the node's
/// link latency each. 0 at tp 1.
double tp_exchange_s(const spec::LlmSpec& model, int tp, const DeviceFacts& device);
/// Devices that train one agent: the smallest power of two that holds its
/// Adam state (16 bytes per parameter) sharded ZeRO-3 style in 60% of each
/// device, the rest for activations (assumption).
int training_group(const spec::LlmSpec& model, double device_memory);
/// Sequences one instance decodes at once: what fits the KV space left by
/// the weights (90% of memory usable) at a mean context of prompt plus half
/// the longest response (paged KV blocks hold what a sequence uses); at least 1.
int decode_slots(const spec::LlmSpec& model, int tp, double device_memory, int context_tokens);

/// One decode iteration of an instance: every active sequence gains a token;
/// the iteration reads the weights and the active sequences' KV caches
/// (memory-bound), plus its tensor-parallel exchanges (tp_exchange_s).
/// `context_tokens` sums the active sequences' contexts.
double decode_iteration_s(const spec::LlmSpec& model, int tp, const DeviceFacts& device,
                          const EngineEfficiency& efficiency, double context_tokens);
/// Prefill of `tokens` prompt tokens (compute-bound).
double prefill_s(const spec::LlmSpec& model, int tp, const DeviceFacts& device, const EngineEfficiency& efficiency,
                 double tokens);
/// Whether training a sample of `tokens` tokens recomputes its forward in
/// backward (gradient checkpointing): when its activations, every layer's
/// with nothing recomputed (34 bytes per token and hidden unit, Korthikanti
/// et al. 2022), exceed the device memory the training state leaves it (40%,
/// training_group's assumption).
bool trains_with_recomputation(const spec::LlmSpec& model, int tokens, double device_memory);
/// Seconds to train one sample of `prompt` + `response` tokens under GRPO on
/// one device: the policy's forward and backward, the forwards that give the
/// old policy's and the reference policy's log-probabilities (verl recomputes
/// the old policy's by default, recompute_old_log_prob; OpenRLHF's experience
/// maker runs both), and the recomputed forward when
/// trains_with_recomputation; one sequence through the transformer model
/// (models/transformer/stack_cost.h: each GEMM and the causal attention at the
/// device's efficiencies, the elementwise kernels at its bandwidth).
double sample_train_s(const spec::LlmSpec& model, int prompt, int response, const DeviceFacts& device);
/// Seconds for `sample_seconds` (a sum of sample_train_s) on a group of
/// `devices`: ZeRO-3 data parallelism splits the samples over the group (its
/// weight gathers and gradient reductions are not priced: assumption, hidden
/// under compute).
double train_s(double sample_seconds, int devices);
/// Seconds for the optimizer step of an agent sharded over `devices`: an
/// Adam step over its share of the parameters (transformer::adam_seconds).
double optimizer_s(const spec::LlmSpec& model, int devices, const DeviceFacts& device);
/// Bytes of an agent's training state (weights, gradients, Adam), swapped whole.
double training_state_bytes(const spec::LlmSpec& model);
/// Bytes of an agent's bf16 weights (what a publish or an engine reload moves).
double weight_bytes(const spec::LlmSpec& model);

/// Where a framework puts things, for a workload on `devices` devices.
struct Deployment {
  int devices = 0;
  std::vector<int> tp;            // per agent: devices per rollout instance
  std::vector<int> instances;     // per agent at the start of a run
  std::vector<int> slots;         // per agent: sequences one instance decodes at once
  std::vector<int> train_group;   // per agent: devices that train it
  int rollout_devices = 0;        // devices of the rollout pool (all devices when colocated)
  int trainer_groups = 0;         // disaggregated: groups in the training pool
  int trainer_group_devices = 0;  // disaggregated: devices per group (the largest agent's need)
};

/// The placement of `framework` (see the header comment):
///   colocated (sync)   every agent's engine on all D devices (D / tp instances;
///                      the agents take turns); training on all D
///   disaggregated      the training pool is whole groups of the largest
///                      agent's training group, at least one: marti's is one
///                      group per agent, all training at once after the
///                      rollout (MARTI's controller fits every agent's actor
///                      group together), fewer where the devices cannot hold
///                      them beside an instance per agent; flexmarl and its
///                      ablations take the group count that minimises the
///                      predicted step, max(predicted rollout + the last
///                      turn's training over the pool, the batch's training
///                      over the pool) (the micro-batch pipeline trains the
///                      earlier turns under rollout; reconstruction). The rest is
///                      the rollout pool, at least one instance per agent.
///                      marti and nobalance split it equally;
///                      flexmarl and noasync give each next instance to the
///                      slowest agent of the turn where it cuts the predicted
///                      rollout most (an agent's predicted time: its expected
///                      longest response times its iteration cost at its
///                      share of the batch; a turn ends with its slowest agent)
/// InvalidArgument naming the devices when they cannot hold the agents.
StatusOr<Deployment> deploy(const Workload& workload, Framework framework, int devices, const DeviceFacts& device,
                            const EngineEfficiency& efficiency);

/// The expected response length of each agent (the log-normal's mean, cut at the limit).
std::vector<double> expected_response_tokens(const Workload& workload);
/// The expected longest response of each agent's global batch (the
/// log-normal's 1 - 1 / (B + 1) quantile, cut at the limit).
std::vector<double> expected_longest_response_tokens(const Workload& workload);

}  // namespace clustertwin::models::flexmarl
