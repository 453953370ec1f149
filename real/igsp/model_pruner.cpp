#include "real/igsp/model_pruner.h"

#include <cmath>
#include <map>
#include <memory>

#include "common/check.h"

namespace clustertwin::real::igsp {
namespace {

// A Linear's calibration statistics.
struct LinearStats {
  std::unique_ptr<HessianAccumulator> hessian;
  std::unique_ptr<ColumnNormAccumulator> norms;
};

Status check_bytes(const at::Tensor& bytes, int64_t context, const char* what) {
  if (bytes.dim() != 2 || bytes.size(0) == 0 || bytes.size(1) == 0) {
    return Status::invalid_argument(std::string(what) + ": empty, or not [sequences, length] (got " +
                                    std::to_string(bytes.dim()) + " dimensions)");
  }
  if (bytes.scalar_type() != at::kLong) return Status::invalid_argument(std::string(what) + ": bytes must be int64");
  if (bytes.size(1) > context) {
    return Status::invalid_argument(std::string(what) + ": sequences of " + std::to_string(bytes.size(1)) +
                                    " bytes are longer than the model's context " + std::to_string(context));
  }
  if (bytes.min().item<int64_t>() < 0 || bytes.max().item<int64_t>() > 255)
    return Status::invalid_argument(std::string(what) + ": values outside [0, 255]");
  return Status::ok();
}

}  // namespace

const char* prune_method_name(PruneMethod method) {
  switch (method) {
    case PruneMethod::kSparseGpt:
      return "sparsegpt";
    case PruneMethod::kWanda:
      return "wanda";
    case PruneMethod::kMagnitude:
      return "magnitude";
  }
  return "?";
}

StatusOr<PruneMethod> prune_method_from_name(const std::string& name) {
  for (PruneMethod m : {PruneMethod::kSparseGpt, PruneMethod::kWanda, PruneMethod::kMagnitude}) {
    if (name == prune_method_name(m)) return m;
  }
  return Status::invalid_argument("method '" + name + "': unknown (allowed: sparsegpt, wanda, magnitude)");
}

StatusOr<std::vector<LinearReport>> prune_byte_lm(models::nets::ByteLm& model, const at::Tensor& calibration,
                                                  const ModelPruneOptions& options) {
  CT_RETURN_IF_ERROR(check_bytes(calibration, model->options().context, "calibration set"));
  if (options.batch_size < 1)
    return Status::invalid_argument("batch size " + std::to_string(options.batch_size) + " must be >= 1");
  at::NoGradGuard no_grad;
  const int64_t sequences = calibration.size(0);
  // The hidden states entering the current block, one tensor per batch.
  std::vector<at::Tensor> hidden;
  for (int64_t first = 0; first < sequences; first += options.batch_size)
    hidden.push_back(model->embed(calibration.slice(0, first, std::min(sequences, first + options.batch_size))));
  std::vector<LinearReport> reports;
  for (size_t b = 0; b < model->blocks().size(); ++b) {
    models::nets::ByteLmBlock& block = model->blocks()[b];
    const std::string prefix = "block" + std::to_string(b) + ".";
    std::map<std::string, LinearStats> stats;
    for (const auto& [name, linear] : block->linears()) {
      const int64_t in = linear->weight.size(1);
      stats[name].hessian = std::make_unique<HessianAccumulator>(prefix + name, in);
      stats[name].norms = std::make_unique<ColumnNormAccumulator>(prefix + name, in);
    }
    // Linears that multiply the very tensor the Linear before them did (q, k and v all read LN1 of the
    // block's input) share that one's statistics: the same additions of the same inputs, made once.
    std::map<std::string, std::string> reads_as;  // a Linear -> the one whose statistics are its own
    at::Tensor previous_input;                    // held, so that no later tensor can take its address
    std::string previous_name;
    Status tap_status;
    const models::nets::LinearTap tap = [&](const std::string& name, const torch::Tensor& input) {
      if (!tap_status.is_ok() || options.method == PruneMethod::kMagnitude) return;
      const bool same = previous_input.defined() && previous_input.is_same(input);
      const auto shared = reads_as.find(name);
      // Every batch runs the same forward: a Linear shares for all of them or for none.
      LinearStats& own = stats.at(name);
      const bool first_batch = own.hessian->samples() + own.norms->samples() == 0;
      CT_CHECK(same ? shared != reads_as.end() || first_batch : shared == reads_as.end())
          << prefix << name << " reads the input of the Linear before it in some batches only";
      if (same) {
        reads_as.emplace(name, previous_name);
        return;
      }
      previous_input = input;
      previous_name = name;
      Status st = options.method == PruneMethod::kSparseGpt ? own.hessian->add(input) : own.norms->add(input);
      if (!st.is_ok()) tap_status = st;
    };
    for (const at::Tensor& x : hidden)
      (void)block->forward(x, tap);
    CT_RETURN_IF_ERROR(tap_status);
    for (const auto& [name, linear] : block->linears()) {
      const std::string layer = prefix + name;
      const auto shared = reads_as.find(name);
      const LinearStats& s = stats.at(shared == reads_as.end() ? name : shared->second);
      StatusOr<PruneResult> r = Status::internal("no method");
      switch (options.method) {
        case PruneMethod::kSparseGpt:
          r = sparsegpt(linear->weight, s.hessian->hessian(), options.layer, layer);
          break;
        case PruneMethod::kWanda:
          r = wanda(linear->weight, s.norms->norms(), options.layer, layer);
          break;
        case PruneMethod::kMagnitude:
          r = magnitude(linear->weight, options.layer, layer);
          break;
      }
      if (!r.is_ok()) return r.status();
      linear->weight.copy_(r->weight);
      LinearReport report;
      report.name = layer;
      report.rows = linear->weight.size(0);
      report.columns = linear->weight.size(1);
      report.pruned = (~r->mask).sum().item<int64_t>();
      report.loss = r->loss;
      report.damping = r->damping;
      reports.push_back(report);
    }
    // The next block sees what the pruned block makes of its inputs (the last block has none to feed).
    if (b + 1 < model->blocks().size()) {
      for (at::Tensor& x : hidden)
        x = block->forward(x);
    }
  }
  return reports;
}

namespace {

// Each row's summed negative log-likelihood of its next bytes, [sequences] double.
at::Tensor row_nll(models::nets::ByteLm& model, const at::Tensor& bytes, int batch_size) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  for (int64_t first = 0; first < bytes.size(0); first += batch_size) {
    const at::Tensor batch = bytes.slice(0, first, std::min(bytes.size(0), first + batch_size));
    const at::Tensor logits = model->forward(batch.slice(1, 0, batch.size(1) - 1));
    const at::Tensor targets = batch.slice(1, 1, batch.size(1));
    const at::Tensor logp = at::log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
    parts.push_back(-logp.to(at::kDouble).sum(1));
  }
  return parts.empty() ? at::zeros({0}, at::kDouble) : at::cat(parts);
}

}  // namespace

double byte_perplexity(models::nets::ByteLm& model, const at::Tensor& bytes, int batch_size) {
  const int64_t count = bytes.size(0) * std::max<int64_t>(0, bytes.size(1) - 1);
  if (count == 0) return 0.0;
  return std::exp(row_nll(model, bytes, batch_size).sum().item<double>() / static_cast<double>(count));
}

std::vector<double> sample_perplexities(models::nets::ByteLm& model, const at::Tensor& bytes, int batch_size) {
  std::vector<double> out;
  if (bytes.size(0) == 0 || bytes.size(1) < 2) return out;
  const at::Tensor nll = row_nll(model, bytes, batch_size).contiguous();
  const double per_row = static_cast<double>(bytes.size(1) - 1);
  for (int64_t i = 0; i < nll.size(0); ++i)
    out.push_back(std::exp(nll[i].item<double>() / per_row));
  return out;
}

}  // namespace clustertwin::real::igsp
