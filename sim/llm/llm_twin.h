#pragma once

// The LLM twin: one training step of a dense decoder-only transformer split
// over GPUs with tensor, pipeline and data parallelism (models/llm), run as a
// step plan in sim/core: every rank's passes, its tensor-parallel
// all-reduces, the pipeline's sends and receives and the data-parallel
// reductions, the transfers moved on the profile's network.
//
// The compute of a pass is priced on one GPU by models/transformer's stack
// costs, with the GEMM and attention efficiencies taken, first found first:
//
//   1. a device profile the setup names (measured curves by shape,
//      sim/platforms/devices/);
//   2. the profile's fitted entries (`clustertwin calibrate steps`,
//      calibrators/llm): costs llm/gemm and llm/gemm_fp8 (flop_rate: the
//      GEMMs' achieved FLOP/s), llm/attention (flop_rate) and llm/layer
//      (latency: per layer and pass);
//   3. DeviceRates' defaults (assumptions, models/transformer/stack_cost.h).
//
// The breakdown of a step, per GPU and averaged over GPUs: compute (the
// passes), exposed TP (the tensor-parallel all-reduces, which block the
// compute stream), optimizer, exposed DP (data-parallel reductions no pass or
// optimizer hides) and the pipeline bubble (the rest: a stage waiting for
// its neighbours).

#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/llm/llm_split.h"
#include "models/transformer/stack_cost.h"
#include "sim/core/plan_job.h"
#include "sim/core/sim_result.h"

namespace clustertwin::sim::llm {

/// The profile cost entries that hold fitted efficiencies (see above).
inline constexpr const char* kGemmKey = "llm/gemm";
inline constexpr const char* kGemmFp8Key = "llm/gemm_fp8";
inline constexpr const char* kAttentionKey = "llm/attention";
inline constexpr const char* kLayerKey = "llm/layer";

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// The values the llm/* entries of `profile` hold, by name: "gemm" and
/// "attention" (shares of the bf16 peak), "gemm_fp8" (of the fp8 peak),
/// "overhead" (seconds per layer and pass); only those the profile has.
std::map<std::string, double> llm_fitted_values(const cluster::ClusterProfile& profile);

/// `base` with `values` (names as llm_fitted_values gives them) written as its llm/* entries.
cluster::ClusterProfile with_llm_values(const cluster::ClusterProfile& base,
                                        const std::map<std::string, double>& values);

/// A job of the LLM twin.
struct LlmSetup {
  models::transformer::Transformer model;
  models::llm::Split split;
  /// A device profile (shipped name or path) whose measured curves price the GEMMs and attention; "" for none.
  std::string device_profile;
};

/// `sim llm`'s defaults: GPT-3 175B (h 12,288, 96 heads, 96 layers, seq
/// 2,048), tp 8, pp 16, micro-batch 1, global batch 1,536 (Brown et al.
/// 2020's batch), 1F1B, full recomputation; dp from the workers.
LlmSetup default_llm_setup();

/// The rates that price a setup's passes on `profile`'s device, and where
/// they come from ("device profile h200", "fitted: PROFILE's llm/* costs",
/// "assumed"). InvalidArgument naming the field (precision, device_profile)
/// for a precision the device has no peak for or an unknown device profile.
StatusOr<models::transformer::DeviceRates> llm_device_rates(const LlmSetup& setup,
                                                            const cluster::ClusterProfile& profile,
                                                            std::string* source = nullptr);

/// Checks the setup for `workers` GPUs of `profile`: the split
/// (models/llm/llm_split.h check_split), the worker count, and that a GPU's
/// memory (gpu_memory) fits the device's. InvalidArgument naming the field.
Status check_llm(const LlmSetup& setup, const cluster::ClusterProfile& profile, int workers);

/// The twin's default run: one step from an idle cluster, no warm-up, no
/// drain. A Megatron step ends in a barrier (the gradient norm's all-reduce
/// before the optimizer, the tied embeddings' all-reduce), so steps do not
/// overlap and one is the steady state; the zero 1 weights' all-gather ends it.
SimOptions llm_sim_options(int workers);

/// The step plan with its costs, ready to run (after check_llm).
StatusOr<std::unique_ptr<PlanJob>> make_llm_job(const LlmSetup& setup, const cluster::ClusterProfile& profile,
                                                const SimOptions& options);

/// Where a GPU's step goes, seconds per step averaged over GPUs; they add up to the step.
struct LlmBreakdown {
  double compute_s = 0;
  double exposed_tp_s = 0;
  double bubble_s = 0;
  double exposed_dp_s = 0;
  double optimizer_s = 0;
};

struct LlmResult {
  SimResult sim;
  double step_s = 0;
  double mfu = 0;  // model FLOPs (transformer.h's convention) over workers x the bf16 peak x step
  double tokens_per_s = 0;
  double model_flops = 0;  // per step
  LlmBreakdown breakdown;
  models::llm::GpuMemory memory;  // per GPU of the first stage, bytes
  double memory_capacity = 0;     // the device's, bytes
  std::string rates_source;
};

/// Checks, prices and simulates one setup (in a child process; options.trace_out writes the Perfetto trace).
StatusOr<LlmResult> simulate_llm(const LlmSetup& setup, const cluster::ClusterProfile& profile,
                                 const SimOptions& options);

/// A simulated step as the twin reports it: MFU, tokens/s, breakdown, memory (not rates_source).
LlmResult llm_result(const LlmSetup& setup, const cluster::ClusterProfile& profile, SimResult sim);

/// A split as JSON: tp, pp, dp, micro-batches, schedule, recompute, ... (what `sim llm --json` and `plan llm
/// --json` print).
nlohmann::ordered_json llm_split_json(const models::llm::Split& split);

/// The result as the JSON object `sim llm --json` prints.
std::string llm_result_json(const LlmSetup& setup, const cluster::ClusterProfile& profile, const LlmResult& result);

/// The result as `sim llm` prints it: a few lines of text.
std::string llm_result_text(const LlmSetup& setup, const cluster::ClusterProfile& profile, const LlmResult& result);

}  // namespace clustertwin::sim::llm
