#pragma once

// Pruning a whole ByteLm layer by layer, as SparseGPT's reference prunes a
// transformer: for each block in turn, the calibration inputs run through it
// once while every Linear's input is recorded (a Hessian and column norms per
// Linear), every Linear of the block is pruned, and the inputs are run again
// through the *pruned* block to feed the next one. Embeddings, norms and the
// head are not pruned.

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "models/torch/byte_lm.h"
#include "real/igsp/prune.h"

namespace clustertwin::real::igsp {

enum class PruneMethod { kSparseGpt, kWanda, kMagnitude };

/// "sparsegpt", "wanda", "magnitude".
const char* prune_method_name(PruneMethod method);
/// The method of a name; InvalidArgument listing the allowed ones.
StatusOr<PruneMethod> prune_method_from_name(const std::string& name);

struct ModelPruneOptions {
  PruneMethod method = PruneMethod::kSparseGpt;
  PruneOptions layer;   // sparsity or N:M, SparseGPT's block size and damping
  int batch_size = 16;  // calibration sequences per forward
};

/// What happened to one Linear ("block2.fc1").
struct LinearReport {
  std::string name;
  int64_t rows = 0, columns = 0;
  int64_t pruned = 0;  // entries now exactly 0 that the mask removed
  double loss = 0;     // SparseGPT's reconstruction loss (0 for the others)
  double damping = 0;  // SparseGPT's relative damping actually used
};

/// Prunes `model` in place on `calibration` ([sequences, T] int64 bytes, T
/// <= the model's context). InvalidArgument for an empty calibration set,
/// bytes out of range, sequences longer than the context, or what a layer's
/// kernel rejects (naming the Linear).
StatusOr<std::vector<LinearReport>> prune_byte_lm(models::nets::ByteLm& model, const at::Tensor& calibration,
                                                  const ModelPruneOptions& options);

/// exp(mean negative log-likelihood of each next byte) over `bytes`
/// ([sequences, T], T >= 2), in batches.
double byte_perplexity(models::nets::ByteLm& model, const at::Tensor& bytes, int batch_size = 16);

/// The same per row of `bytes`: one perplexity per sequence.
std::vector<double> sample_perplexities(models::nets::ByteLm& model, const at::Tensor& bytes, int batch_size = 16);

}  // namespace clustertwin::real::igsp
