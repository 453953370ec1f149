#include "real/sis/selective_sampling.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

namespace clustertwin::real::sis {
namespace {

std::string shape_of(const at::Tensor& t) {
  std::ostringstream s;
  s << "[";
  for (int64_t d = 0; d < t.dim(); ++d)
    s << (d ? ", " : "") << t.size(d);
  s << "]";
  return s.str();
}

Status expect_shape(const char* name, const at::Tensor& t, at::IntArrayRef shape, const char* like) {
  if (!t.defined()) return Status::invalid_argument(std::string("sis: ") + name + " is missing");
  if (t.sizes() != shape) {
    std::ostringstream s;
    s << "sis: " << name << " has shape " << shape_of(t) << ", expected [";
    for (size_t d = 0; d < shape.size(); ++d)
      s << (d ? ", " : "") << shape[d];
    s << "] (" << like << ")";
    return Status::invalid_argument(s.str());
  }
  return Status::ok();
}

// A non-finite entry where `real` ([B, T]) holds; `t` is [B, T] or [B, T, K]. The common case costs
// one reduction: a row with a non-finite entry has a non-finite sum (log-probabilities are far from
// overflowing one); only then is the entry located.
Status expect_finite(const char* name, const at::Tensor& t, const at::Tensor& real) {
  const at::Tensor rows = t.dim() == 3 ? t.detach().sum(-1) : t.detach();
  if (at::isfinite(rows).logical_or(~real).all().item<bool>()) return Status::ok();
  at::Tensor bad = ~at::isfinite(t.detach());
  if (t.dim() == 3) bad = bad.any(-1);
  bad = bad & real;
  if (!bad.any().item<bool>()) return Status::ok();
  const at::Tensor where = bad.nonzero()[0];
  return Status::invalid_argument(std::string("sis: ") + name + " " + shape_of(t) + " has a non-finite value at [" +
                                  std::to_string(where[0].item<int64_t>()) + ", " +
                                  std::to_string(where[1].item<int64_t>()) + "]");
}

// log M = max over the last dimension of (log pi_new - log pi_old), [B, T], and whether every entry at a real
// position of both tensors is finite. On CPU one fused pass over the [B, T, K] pair: ATen's max and sum over a short
// last dimension take several passes each (4.5 ms for [64, 1024, 20] against 0.7 ms here). Elsewhere (CUDA) the same
// from tensor operations: a non-finite entry in either tensor makes the difference non-finite (inf - inf and nan
// are nan), so one check of the difference's row sums covers both.
std::pair<at::Tensor, bool> log_envelope_of(const at::Tensor& logp_new, const at::Tensor& logp_old,
                                            const at::Tensor& real) {
  const at::Tensor a = logp_new.detach(), b = logp_old.detach();
  if (!a.is_cpu() || !b.is_cpu() || a.scalar_type() != b.scalar_type() ||
      (a.scalar_type() != at::kFloat && a.scalar_type() != at::kDouble)) {
    const at::Tensor difference = a - b;
    const bool finite = at::isfinite(difference.sum(-1)).logical_or(~real).all().item<bool>();
    return {difference.amax(-1), finite};
  }
  const at::Tensor na = a.contiguous(), nb = b.contiguous(), mask = real.to(at::kBool).contiguous();
  const int64_t rows = na.size(0) * na.size(1), k = na.size(2);
  at::Tensor envelope = at::empty({na.size(0), na.size(1)}, na.options());
  std::atomic<bool> finite{true};
  AT_DISPATCH_FLOATING_TYPES(na.scalar_type(), "sis_log_envelope", [&] {
    const scalar_t* pa = na.data_ptr<scalar_t>();
    const scalar_t* pb = nb.data_ptr<scalar_t>();
    const bool* pm = mask.data_ptr<bool>();
    scalar_t* out = envelope.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 256, [&](int64_t begin, int64_t end) {
      bool chunk_finite = true;
      for (int64_t row = begin; row < end; ++row) {
        const scalar_t* x = pa + row * k;
        const scalar_t* y = pb + row * k;
        scalar_t best = -std::numeric_limits<scalar_t>::infinity(), sum = 0;
        for (int64_t j = 0; j < k; ++j) {
          const scalar_t d = x[j] - y[j];
          best = d > best ? d : best;
          sum += d;  // non-finite exactly when some d is (log-probabilities are far from overflowing a sum)
        }
        out[row] = best;
        if (pm[row] && !std::isfinite(sum)) chunk_finite = false;
      }
      if (!chunk_finite) finite = false;
    });
  });
  return {envelope, finite.load()};
}

}  // namespace

StatusOr<SisResult> sis_accept(const SisInputs& in, uint64_t seed) {
  if (!in.logp_new.defined() || in.logp_new.dim() != 2)
    return Status::invalid_argument("sis: logp_new has shape " +
                                    (in.logp_new.defined() ? shape_of(in.logp_new) : std::string("(none)")) +
                                    ", expected [B, T]");
  const int64_t b = in.logp_new.size(0), t = in.logp_new.size(1);
  CT_RETURN_IF_ERROR(expect_shape("logp_old", in.logp_old, {b, t}, "like logp_new"));
  at::Tensor real = at::ones({b, t}, in.logp_new.options().dtype(at::kBool));
  if (in.mask.defined()) {
    CT_RETURN_IF_ERROR(expect_shape("mask", in.mask, {b, t}, "like logp_new"));
    real = in.mask.to(at::kBool);
  }
  const bool exact = in.full_logp_old.defined() || in.full_logp_new.defined();
  at::Tensor log_envelope, in_set;
  if (exact) {
    const int64_t v = in.full_logp_old.defined() ? in.full_logp_old.size(-1) : 0;
    CT_RETURN_IF_ERROR(expect_shape("full_logp_old", in.full_logp_old, {b, t, v}, "[B, T, V]"));
    CT_RETURN_IF_ERROR(expect_shape("full_logp_new", in.full_logp_new, {b, t, v}, "like full_logp_old"));
    bool finite = false;
    std::tie(log_envelope, finite) = log_envelope_of(in.full_logp_new, in.full_logp_old, real);
    if (!finite) {  // find which, and where
      CT_RETURN_IF_ERROR(expect_finite("full_logp_old", in.full_logp_old, real));
      CT_RETURN_IF_ERROR(expect_finite("full_logp_new", in.full_logp_new, real));
    }
    in_set = at::ones({b, t}, in.logp_new.options().dtype(at::kBool));
  } else {
    const int64_t k = in.topk_logp_old.defined() && in.topk_logp_old.dim() == 3 ? in.topk_logp_old.size(2) : 0;
    CT_RETURN_IF_ERROR(expect_shape("topk_logp_old", in.topk_logp_old, {b, t, k}, "[B, T, K]"));
    CT_RETURN_IF_ERROR(expect_shape("topk_logp_new", in.topk_logp_new, {b, t, k}, "like topk_logp_old"));
    CT_RETURN_IF_ERROR(expect_shape("in_topk", in.in_topk, {b, t}, "like logp_new"));
    if (k < 1) return Status::invalid_argument("sis: topk_logp_old " + shape_of(in.topk_logp_old) + " has K = 0");
    if (in.vocab > 0 && k > in.vocab) {
      return Status::invalid_argument("sis: topk_logp_old " + shape_of(in.topk_logp_old) + " has K = " +
                                      std::to_string(k) + ", more than the vocabulary of " + std::to_string(in.vocab));
    }
    bool finite = false;
    std::tie(log_envelope, finite) = log_envelope_of(in.topk_logp_new, in.topk_logp_old, real);
    if (!finite) {  // find which, and where
      CT_RETURN_IF_ERROR(expect_finite("topk_logp_old", in.topk_logp_old, real));
      CT_RETURN_IF_ERROR(expect_finite("topk_logp_new", in.topk_logp_new, real));
    }
    in_set = in.in_topk.to(at::kBool);
  }
  CT_RETURN_IF_ERROR(expect_finite("logp_new", in.logp_new, real));
  CT_RETURN_IF_ERROR(expect_finite("logp_old", in.logp_old, real));

  SisResult r;
  r.log_ratio = in.logp_new - in.logp_old.detach();
  r.log_envelope = log_envelope;
  // min(1, w / M) in log space: exp(min(0, log w - log M)). With a top-K envelope a token in V_K can
  // still have w > M_hat; the min caps it.
  const at::Tensor log_accept = at::clamp_max(r.log_ratio.detach().to(at::kDouble) - log_envelope.to(at::kDouble), 0);
  r.accept_prob = at::where(in_set & real, at::exp(log_accept), at::zeros_like(log_accept));
  // The draw comes from a CPU generator whatever the device, so that a seed accepts the same tokens on CPU and GPU.
  at::Tensor u;
  if (in.draws.defined()) {
    CT_RETURN_IF_ERROR(expect_shape("draws", in.draws, {b, t}, "like logp_new"));
    u = in.draws.to(log_accept.device(), at::kDouble);
  } else {
    at::Generator generator = at::detail::createCPUGenerator(seed);
    u = at::rand({b, t}, generator, at::TensorOptions().dtype(at::kDouble)).to(log_accept.device());
  }
  r.accepted = (u < r.accept_prob) & real & in_set;
  const int64_t tokens = real.sum().item<int64_t>();
  r.acceptance_rate =
      tokens > 0 ? static_cast<double>(r.accepted.sum().item<int64_t>()) / static_cast<double>(tokens) : 0;
  return r;
}

at::Tensor sis_weights(const SisResult& r, const at::Tensor& base_weight, const at::Tensor& mask) {
  const at::Tensor on_policy = at::exp(r.log_ratio - r.log_ratio.detach());
  at::Tensor w = at::where(r.accepted, on_policy, base_weight);
  if (mask.defined()) w = w * mask.to(w.scalar_type());
  return w;
}

}  // namespace clustertwin::real::sis
