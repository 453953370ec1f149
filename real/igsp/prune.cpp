#include "real/igsp/prune.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "common/check.h"
#include "real/igsp/selection.h"
#include "real/igsp/sparsegpt_rows.h"

namespace clustertwin::real::igsp {
namespace {

std::string shape_of(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

std::string describe(const at::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  return shape_of(t) + " " + c10::toString(t.scalar_type());
}

Status invalid(const std::string& layer_name, const std::string& what) {
  return Status::invalid_argument(layer_name + ": " + what);
}

bool all_finite(const at::Tensor& t) {
  return at::isfinite(t).all().item<bool>();
}

bool is_n_of_m(const PruneOptions& o) {
  return o.n != 0 || o.m != 0;
}

// The checks every kernel shares. `sparsegpt` adds the Hessian's options.
Status check_options(const PruneOptions& o, bool sparsegpt, const std::string& layer_name) {
  std::ostringstream bad;
  if (!(o.sparsity >= 0 && o.sparsity < 1))
    bad << "sparsity " << o.sparsity << " must be in [0, 1)";
  else if (is_n_of_m(o) && !(o.n >= 1 && o.n < o.m))
    bad << "n:m " << o.n << ":" << o.m << " must have 1 <= n < m";
  else if (o.compute_dtype != at::kFloat && o.compute_dtype != at::kDouble)
    bad << "compute_dtype " << c10::toString(o.compute_dtype) << " must be Float or Double";
  else if (sparsegpt && o.block_size < 1)
    bad << "block_size " << o.block_size << " must be >= 1";
  else if (sparsegpt && is_n_of_m(o) && o.block_size % o.m != 0)
    bad << "block_size " << o.block_size << " must be a multiple of m " << o.m;
  else if (sparsegpt && !(o.damping > 0 && std::isfinite(o.damping)))
    bad << "damping " << o.damping << " must be > 0";
  else if (sparsegpt && o.max_damping_retries < 0)
    bad << "max_damping_retries " << o.max_damping_retries << " must be >= 0";
  if (!bad.str().empty()) return invalid(layer_name, bad.str());
  return Status::ok();
}

Status check_weight(const at::Tensor& weight, const PruneOptions& o, const std::string& layer_name) {
  if (!weight.defined() || weight.dim() != 2 || !at::isFloatingType(weight.scalar_type()))
    return invalid(layer_name, "weight " + describe(weight) + " must be a 2-D floating-point tensor");
  if (weight.numel() == 0) return invalid(layer_name, "weight " + shape_of(weight) + " is empty");
  if (is_n_of_m(o) && weight.size(1) % o.m != 0) {
    return invalid(layer_name, "weight " + shape_of(weight) + ": " + std::to_string(weight.size(1)) +
                                   " columns is not a multiple of m " + std::to_string(o.m));
  }
  if (!all_finite(weight)) return invalid(layer_name, "weight has non-finite entries");
  return Status::ok();
}

Status check_hessian(const at::Tensor& hessian, int64_t columns, const std::string& layer_name) {
  if (!hessian.defined() || hessian.dim() != 2 || hessian.size(0) != columns || hessian.size(1) != columns ||
      !at::isFloatingType(hessian.scalar_type())) {
    return invalid(layer_name, "hessian " + describe(hessian) + " must be floating point of shape [" +
                                   std::to_string(columns) + ", " + std::to_string(columns) + "]");
  }
  if (!all_finite(hessian)) return invalid(layer_name, "hessian has non-finite entries");
  return Status::ok();
}

Status check_batch(const at::Tensor& x, int64_t columns, const std::string& layer_name) {
  if (!x.defined() || x.dim() < 1 || !at::isFloatingType(x.scalar_type()) || x.size(-1) != columns) {
    return invalid(layer_name, "input " + describe(x) + " must be floating point with " + std::to_string(columns) +
                                   " columns in its last dimension");
  }
  return Status::ok();
}

// True at the k lowest of every run of `width` consecutive entries of `score`
// (row-major), equal scores pruned in index order, as a stable sort would, so
// counts are exact on ties. One partial selection per run, runs in parallel.
at::Tensor lowest_per_run(const at::Tensor& score, int64_t width, int64_t k) {
  const at::Tensor s = score.to(at::kCPU).contiguous();
  at::Tensor pruned = at::empty(s.sizes(), s.options().dtype(at::kBool));
  const int64_t runs = s.numel() / width;
  constexpr int64_t kEntriesPerTask = 16384;  // below this a thread's start costs more than it saves
  AT_DISPATCH_FLOATING_TYPES(s.scalar_type(), "lowest_per_run", [&] {
    const scalar_t* data = s.data_ptr<scalar_t>();
    bool* out = pruned.data_ptr<bool>();
    at::parallel_for(0, runs, std::max<int64_t>(1, kEntriesPerTask / width), [&](int64_t begin, int64_t end) {
      std::vector<SelectionKey<scalar_t>> scratch;
      for (int64_t r = begin; r < end; ++r)
        mark_lowest(data + r * width, width, k, out + r * width, scratch);
    });
  });
  return pruned.to(score.device());
}

// Wanda's and magnitude's rule: each row of `score` [rows, columns] on its own.
at::Tensor prune_rows(const at::Tensor& score, const PruneOptions& o) {
  if (o.m > 0) return lowest_per_run(score, o.m, o.n);
  return lowest_per_run(score, score.size(1), pruned_count(o.sparsity, score.size(1)));
}

PruneResult row_wise_result(const at::Tensor& weight, const at::Tensor& score, const PruneOptions& o) {
  const at::Tensor pruned = prune_rows(score, o);
  PruneResult result;
  result.weight = weight.masked_fill(pruned, 0);
  result.mask = pruned.logical_not();
  return result;
}

// Wanda's and magnitude's rule in one pass over a CPU weight in the compute
// dtype: per row, the scores (|w|, times the column's input norm for Wanda,
// one IEEE multiply as the tensor expression computes it), the selection,
// and the pruned copy and mask written in place, without the tensor
// expression's four full-size temporaries. Same result as row_wise_result.
PruneResult row_wise_fused(const at::Tensor& weight, const at::Tensor& norms, const PruneOptions& o) {
  const at::Tensor w = weight.contiguous();
  PruneResult result;
  result.weight = w.clone();
  result.mask = at::empty(w.sizes(), w.options().dtype(at::kBool));
  const int64_t rows = w.size(0), columns = w.size(1);
  const int64_t width = o.m > 0 ? o.m : columns;
  const int64_t k = o.m > 0 ? o.n : pruned_count(o.sparsity, columns);
  constexpr int64_t kEntriesPerTask = 16384;  // as lowest_per_run
  AT_DISPATCH_FLOATING_TYPES(w.scalar_type(), "row_wise_fused", [&] {
    const scalar_t* in = w.data_ptr<scalar_t>();
    const scalar_t* norm = norms.defined() ? norms.data_ptr<scalar_t>() : nullptr;
    scalar_t* out = result.weight.data_ptr<scalar_t>();
    bool* keep = result.mask.data_ptr<bool>();
    at::parallel_for(0, rows, std::max<int64_t>(1, kEntriesPerTask / columns), [&](int64_t begin, int64_t end) {
      std::vector<scalar_t> score(static_cast<size_t>(columns));
      std::unique_ptr<bool[]> pruned(new bool[static_cast<size_t>(columns)]);
      std::vector<SelectionKey<scalar_t>> scratch;
      for (int64_t r = begin; r < end; ++r) {
        const scalar_t* row = in + r * columns;
        for (int64_t c = 0; c < columns; ++c)
          score[static_cast<size_t>(c)] = norm ? std::abs(row[c]) * norm[c] : std::abs(row[c]);
        for (int64_t start = 0; start < columns; start += width)
          mark_lowest(score.data() + start, width, k, pruned.get() + start, scratch);
        scalar_t* out_row = out + r * columns;
        bool* keep_row = keep + r * columns;
        for (int64_t c = 0; c < columns; ++c) {
          if (pruned[static_cast<size_t>(c)]) out_row[c] = 0;
          keep_row[c] = !pruned[static_cast<size_t>(c)];
        }
      }
    });
  });
  return result;
}

// Whether row_wise_fused applies: a CPU weight already in the compute dtype.
bool fusable(const at::Tensor& weight, const PruneOptions& o) {
  return weight.device().is_cpu() && weight.scalar_type() == o.compute_dtype &&
         (weight.scalar_type() == at::kFloat || weight.scalar_type() == at::kDouble);
}

struct InverseFactor {
  at::Tensor upper;  // upper Cholesky factor of (H + lambda I)^-1
  double damping = 0;
  int retries = 0;
};

// Steps 2-3 of the reference with the damping raised tenfold on each failure.
StatusOr<InverseFactor> inverse_factor(const at::Tensor& hessian, const PruneOptions& o,
                                       const std::string& layer_name) {
  const double mean_diagonal = hessian.diagonal().mean().item<double>();
  double damping = o.damping;
  for (int retries = 0;; ++retries) {
    try {
      at::Tensor damped = hessian.clone();
      damped.diagonal().add_(damping * mean_diagonal);
      auto [lower, info] = at::linalg_cholesky_ex(damped);
      if (info.item<int64_t>() == 0) {
        auto [upper, upper_info] = at::linalg_cholesky_ex(at::cholesky_inverse(lower), /*upper=*/true);
        if (upper_info.item<int64_t>() == 0 && all_finite(upper)) return InverseFactor{upper, damping, retries};
      }
    } catch (const c10::Error&) {
      // A failed factorisation is handled like info != 0: more damping.
    }
    if (retries == o.max_damping_retries) break;
    damping *= 10;
  }
  std::ostringstream message;
  message << "the Hessian is not positive definite even with damping " << damping << " (" << o.max_damping_retries
          << " retries); use more or different calibration data";
  return invalid(layer_name, message.str());
}

// The column loop over one block in libtorch calls, as the reference writes
// it: w1 [rows, count] (a copy of the block), err1 [rows, count] written.
void column_loop_in_calls(at::Tensor& w1, const at::Tensor& h_inv1, at::Tensor& pruned1, at::Tensor& err1,
                          const PruneOptions& o, bool choose_n_of_m) {
  const int64_t count = w1.size(1);
  const at::Tensor d = h_inv1.diagonal();
  for (int64_t i = 0; i < count; ++i) {
    if (choose_n_of_m && i % o.m == 0) {
      const at::Tensor score = w1.narrow(1, i, o.m).square() / d.narrow(0, i, o.m).square().unsqueeze(0);
      pruned1.narrow(1, i, o.m).copy_(lowest_per_run(score, o.m, o.n));
    }
    // err = (w - q) / H_inv[i,i], q = w with the pruned entries zeroed.
    const at::Tensor err = w1.select(1, i) * pruned1.select(1, i) / d[i];
    w1.narrow(1, i, count - i).addr_(err, h_inv1.select(0, i).narrow(0, i, count - i), /*beta=*/1, /*alpha=*/-1);
    err1.select(1, i).copy_(err);
  }
  // The update leaves w - err x H_inv[i,i] = 0 up to rounding: make it exact.
  w1.masked_fill_(pruned1, 0);
}

// The same loop as sparsegpt_rows.h's hand-written one over each row's
// contiguous block, in place in w; rows in parallel.
template <typename T>
void column_loop_in_rows(at::Tensor& w, int64_t first, int64_t count, const at::Tensor& h_inv_rows, at::Tensor& pruned,
                         at::Tensor& err1, const PruneOptions& o, bool choose_n_of_m) {
  const int64_t rows = w.size(0), columns = w.size(1);
  SparseGptBlockRows<T> block;
  block.h_inv = h_inv_rows.data_ptr<T>() + first * columns + first;
  block.h_inv_stride = columns;
  block.count = count;
  block.weight = w.data_ptr<T>() + first;
  block.weight_stride = columns;
  block.pruned = pruned.data_ptr<bool>() + first;
  block.pruned_stride = columns;
  block.err = err1.data_ptr<T>();
  block.err_stride = count;
  if (choose_n_of_m) {
    block.n = o.n;
    block.m = o.m;
  }
  constexpr int64_t kRowsPerTask = 16;
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t begin, int64_t end) { sparsegpt_block_rows(block, begin, end); });
}

// The reference's fasterprune. `keep` is a fixed mask, or undefined to choose one per block.
StatusOr<PruneResult> sparsegpt_impl(const at::Tensor& weight, const at::Tensor& hessian, const at::Tensor& keep,
                                     const PruneOptions& o, const std::string& layer_name) {
  const at::NoGradGuard no_grad;  // a model's weights require grad; pruning is not part of training
  CT_RETURN_IF_ERROR(check_options(o, /*sparsegpt=*/true, layer_name));
  CT_RETURN_IF_ERROR(check_weight(weight, o, layer_name));
  CT_RETURN_IF_ERROR(check_hessian(hessian, weight.size(1), layer_name));
  const int64_t rows = weight.size(0), columns = weight.size(1);

  at::Tensor w = weight.to(o.compute_dtype).contiguous().clone();
  at::Tensor h = hessian.to(w.device(), o.compute_dtype).contiguous().clone();
  const at::Tensor dead = h.diagonal() == 0;
  h.diagonal().masked_fill_(dead, 1);
  w.masked_fill_(dead.unsqueeze(0), 0);

  StatusOr<InverseFactor> factor = inverse_factor(h, o, layer_name);
  if (!factor.is_ok()) return factor.status();
  // The lazy updates read the factor as LAPACK left it (its strides choose the
  // GEMM's transposes, and so its rounding); the row loop reads it row-major.
  const at::Tensor& h_inv = factor->upper;
  const bool in_calls = o.column_loop == PruneOptions::ColumnLoop::kLibtorchCalls || !w.is_cpu();
  const at::Tensor h_inv_rows = in_calls ? at::Tensor() : h_inv.contiguous();
  const bool choose_n_of_m = !keep.defined() && o.m > 0;

  at::Tensor pruned = at::zeros({rows, columns}, w.options().dtype(at::kBool));
  // One buffer for every block's errors: err1 is its first rows x count entries.
  const at::Tensor err_buffer = at::empty({rows * std::min<int64_t>(o.block_size, columns)}, w.options());
  double loss = 0;
  for (int64_t i1 = 0; i1 < columns; i1 += o.block_size) {
    const int64_t count = std::min<int64_t>(o.block_size, columns - i1);
    at::Tensor err1 = err_buffer.narrow(0, 0, rows * count).view({rows, count});
    const at::Tensor h_inv1 = h_inv.narrow(0, i1, count).narrow(1, i1, count);
    at::Tensor pruned1 = pruned.narrow(1, i1, count);
    if (keep.defined()) {
      pruned1.copy_(keep.narrow(1, i1, count).logical_not());
    } else if (o.m == 0) {
      const at::Tensor score = w.narrow(1, i1, count).square() / h_inv1.diagonal().square().unsqueeze(0);
      pruned1.copy_(lowest_per_run(score, score.numel(), pruned_count(o.sparsity, score.numel())));
    }
    if (in_calls) {
      at::Tensor w1 = w.narrow(1, i1, count).clone();
      column_loop_in_calls(w1, h_inv1, pruned1, err1, o, choose_n_of_m);
      w.narrow(1, i1, count).copy_(w1);
    } else if (w.scalar_type() == at::kFloat) {
      column_loop_in_rows<float>(w, i1, count, h_inv_rows, pruned, err1, o, choose_n_of_m);
    } else {
      column_loop_in_rows<double>(w, i1, count, h_inv_rows, pruned, err1, o, choose_n_of_m);
    }
    loss += err1.square().sum().item<double>() / 2;
    const int64_t rest = columns - i1 - count;
    if (rest > 0) {
      w.narrow(1, i1 + count, rest)
          .addmm_(err1, h_inv.narrow(0, i1, count).narrow(1, i1 + count, rest), /*beta=*/1, /*alpha=*/-1);
    }
  }

  PruneResult result;
  result.weight = w.to(weight.scalar_type());
  result.mask = pruned.logical_not();
  result.damping = factor->damping;
  result.damping_retries = factor->retries;
  result.loss = loss;
  return result;
}

}  // namespace

int64_t pruned_count(double sparsity, int64_t count) {
  const double exact = sparsity * static_cast<double>(count);
  const double nearest = std::round(exact);
  if (std::abs(exact - nearest) <= 1e-9 * std::max(1.0, exact)) return static_cast<int64_t>(nearest);
  return static_cast<int64_t>(std::floor(exact));
}

HessianAccumulator::HessianAccumulator(std::string layer_name, int64_t columns, at::ScalarType dtype)
    : layer_name_(std::move(layer_name)), columns_(columns), dtype_(dtype) {
  CT_CHECK(columns >= 1) << layer_name_ << ": columns " << columns;
  CT_CHECK(dtype == at::kFloat || dtype == at::kDouble) << layer_name_ << ": dtype " << c10::toString(dtype);
  hessian_ = at::zeros({columns, columns}, at::TensorOptions().dtype(dtype));
}

Status HessianAccumulator::add(const at::Tensor& x) {
  const at::NoGradGuard no_grad;
  CT_RETURN_IF_ERROR(check_batch(x, columns_, layer_name_));
  const at::Tensor tokens = x.reshape({-1, columns_});
  const int64_t batch = tokens.size(0);
  if (batch == 0) return Status::ok();
  if (samples_ == 0) hessian_ = hessian_.to(x.device());
  const int64_t total = samples_ + batch;
  hessian_.mul_(static_cast<double>(samples_) / static_cast<double>(total));
  samples_ = total;
  const at::Tensor scaled = tokens.to(dtype_) * std::sqrt(2.0 / static_cast<double>(total));
  hessian_.addmm_(scaled.t(), scaled);
  return Status::ok();
}

ColumnNormAccumulator::ColumnNormAccumulator(std::string layer_name, int64_t columns)
    : layer_name_(std::move(layer_name)), columns_(columns) {
  CT_CHECK(columns >= 1) << layer_name_ << ": columns " << columns;
  sum_of_squares_ = at::zeros({columns}, at::TensorOptions().dtype(at::kDouble));
}

Status ColumnNormAccumulator::add(const at::Tensor& x) {
  const at::NoGradGuard no_grad;
  CT_RETURN_IF_ERROR(check_batch(x, columns_, layer_name_));
  const at::Tensor tokens = x.reshape({-1, columns_});
  if (tokens.size(0) == 0) return Status::ok();
  if (samples_ == 0) sum_of_squares_ = sum_of_squares_.to(x.device());
  sum_of_squares_.add_(tokens.to(at::kDouble).square().sum(0));
  samples_ += tokens.size(0);
  return Status::ok();
}

StatusOr<PruneResult> sparsegpt(const at::Tensor& weight, const at::Tensor& hessian, const PruneOptions& options,
                                const std::string& layer_name) {
  return sparsegpt_impl(weight, hessian, at::Tensor(), options, layer_name);
}

StatusOr<PruneResult> sparsegpt_with_mask(const at::Tensor& weight, const at::Tensor& hessian, const at::Tensor& keep,
                                          const PruneOptions& options, const std::string& layer_name) {
  if (!keep.defined() || keep.scalar_type() != at::kBool || !weight.defined() || keep.sizes() != weight.sizes())
    return invalid(layer_name, "mask " + describe(keep) + " must be bool of the weight's shape " + describe(weight));
  return sparsegpt_impl(weight, hessian, keep.to(weight.device()), options, layer_name);
}

StatusOr<PruneResult> wanda(const at::Tensor& weight, const at::Tensor& input_norms, const PruneOptions& options,
                            const std::string& layer_name) {
  const at::NoGradGuard no_grad;
  CT_RETURN_IF_ERROR(check_options(options, /*sparsegpt=*/false, layer_name));
  CT_RETURN_IF_ERROR(check_weight(weight, options, layer_name));
  const int64_t columns = weight.size(1);
  if (!input_norms.defined() || input_norms.dim() != 1 || input_norms.size(0) != columns ||
      !at::isFloatingType(input_norms.scalar_type())) {
    return invalid(layer_name, "input_norms " + describe(input_norms) + " must be floating point of shape [" +
                                   std::to_string(columns) + "]");
  }
  if (!all_finite(input_norms) || (input_norms < 0).any().item<bool>())
    return invalid(layer_name, "input_norms must be finite and >= 0");
  const at::Tensor norms = input_norms.to(weight.device(), options.compute_dtype);
  if (fusable(weight, options)) return row_wise_fused(weight, norms.contiguous(), options);
  return row_wise_result(weight, weight.to(options.compute_dtype).abs() * norms.unsqueeze(0), options);
}

StatusOr<PruneResult> magnitude(const at::Tensor& weight, const PruneOptions& options, const std::string& layer_name) {
  const at::NoGradGuard no_grad;
  CT_RETURN_IF_ERROR(check_options(options, /*sparsegpt=*/false, layer_name));
  CT_RETURN_IF_ERROR(check_weight(weight, options, layer_name));
  if (fusable(weight, options)) return row_wise_fused(weight, at::Tensor(), options);
  return row_wise_result(weight, weight.to(options.compute_dtype).abs(), options);
}

}  // namespace clustertwin::real::igsp
