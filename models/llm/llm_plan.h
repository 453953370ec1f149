#pragma once

// One training step of a transformer split over GPUs (llm_split.h) as a step
// plan every rank runs (models/plan/plan.h), and the compute costs its tasks
// name. Plain C++: the LLM twin (sim/llm) runs the plan in sim/core, where the
// tensor-parallel all-reduces, the pipeline's sends and receives and the
// data-parallel reductions are moved on the modelled network.
//
// A stage runs its chunks' forwards (F) and backwards (B) of the step's
// micro-batches on its compute stream in the schedule's order (stage_order):
//
//   1f1b          min(PP - p - 1, M) forwards, then one forward and one
//                 backward alternately, then the remaining backwards
//   gpipe         every forward, then every backward
//   interleaved   Megatron-LM's: the V chunks' forwards in groups of PP
//                 micro-batches, (PP - p - 1) x 2 + (V - 1) x PP of them first
//
// Each F and B is followed on the compute stream by its tensor-parallel
// all-reduce (TP > 1): 2 per layer and pass, 2 more per layer in a backward
// with full recomputation, of micro_batch x seq x hidden bf16 values each,
// issued as one collective of their total (sequence parallelism's all-gathers
// and reduce-scatters move the same bytes). A forward's output goes to the
// next chunk's stage and a backward's gradient to the previous one's, as a
// send of micro_batch x seq x hidden / TP bf16 values (the scatter-gather
// optimisation of Narayanan et al. 2021) on a stream of its own; the
// receiving stage's compute waits for the receive. After a chunk's last
// backward its gradients (fp32 or bf16, llm_split.h's chunk_parameters: embeddings
// included on the first and last chunks) are reduced
// over its data-parallel group: all-reduce, or reduce-scatter with zero 1
// (then the optimizer updates a 1/DP shard and the bf16 weights are
// all-gathered before the next step's first forward). With
// overlap_grad_reduce the last backward is split into buckets of
// max(40M, 1M x DP) of its layers' parameters (Megatron-core's default
// bucket size, assumption), each reducing an equal share of the chunk's
// gradients as soon as it is done. The Adam step runs after
// every reduction of the stage.
//
// Not modelled: the embedding-gradient all-reduce between the first and last
// stages (tied weights), the data loader, the loss's cross-entropy kernels.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/llm/llm_split.h"
#include "models/plan/plan.h"
#include "models/transformer/stack_cost.h"

namespace clustertwin::models::llm {

/// The cost keys of the plan's transfers: no profile prices them (the
/// network moves them), they name them for the step's breakdown.
inline constexpr const char* kTensorParallelKey = "llm/tp";
inline constexpr const char* kPipelineKey = "llm/pp";
inline constexpr const char* kDataParallelKey = "llm/dp";
/// The compute keys of a pass (step_costs' keys but the optimizer's, "llm/optimizer/stageP").
inline constexpr const char* kPassKeys[] = {"llm/forward",       "llm/backward",        "llm/forward_head",
                                            "llm/backward_head", "llm/backward_bucket", "llm/backward_head_bucket"};

/// One pass of one chunk on one micro-batch.
struct PipelineOp {
  bool forward = true;
  int chunk = 0;  // 0..virtual_stages-1; the model's virtual stage is chunk x PP + stage
  int64_t micro_batch = 0;
  bool operator==(const PipelineOp&) const = default;
};

/// Stage `stage`'s passes in the order its compute stream runs them.
std::vector<PipelineOp> stage_order(const Split& split, int stage);

/// The cost keys of step_plan's compute tasks with their seconds on one GPU.
std::map<std::string, double> step_costs(const transformer::Transformer& model, const Split& split,
                                         const transformer::DeviceRates& device);

/// The step plan of `model` split as `split` (checked by check_split).
Plan step_plan(const transformer::Transformer& model, const Split& split);

/// Gradient buckets the last backward of a chunk is split into (1 without overlap_grad_reduce).
int gradient_buckets(const transformer::Transformer& model, const Split& split);

}  // namespace clustertwin::models::llm
