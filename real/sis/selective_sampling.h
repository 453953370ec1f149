#pragma once

// SIS, selective importance sampling (../shared/papers/sis.md): a token-level
// rejection test inside a policy loss. Token y_t, drawn by the behaviour
// policy mu, has ratio w_t = pi_theta(y_t) / mu(y_t). With an envelope M_t
// (the largest pi_theta(v) / mu(v) over the vocabulary, or over mu's top-K
// tokens V_K at t) the token is accepted with probability min(1, w_t / M_t),
// and rejected outright when y_t is not in V_K. Accepted tokens count as
// on-policy (weight 1, gradient of log pi_theta); rejected ones keep the base
// algorithm's weight. The draw is seeded and carries no gradient.
//
// Which ratio is tested (policy lag, or trainer versus rollout engine) is
// the caller's choice of logp_old; redrawing each epoch is a new seed.

#include <ATen/ATen.h>

#include <cstdint>

#include "common/status.h"

namespace clustertwin::real::sis {

struct SisInputs {
  at::Tensor logp_new;  // [B, T] log pi_theta(y_t); may require grad
  at::Tensor logp_old;  // [B, T] log mu(y_t)
  at::Tensor mask;      // [B, T] bool, true for real tokens (undefined: all real)
  // The top-K envelope: mu's K most likely tokens at each position, their
  // log-probabilities under mu and under pi_theta, and whether y_t is one.
  at::Tensor topk_logp_old;  // [B, T, K]
  at::Tensor topk_logp_new;  // [B, T, K]
  at::Tensor in_topk;        // [B, T] bool
  // Or the exact envelope, from both full distributions (then the top-K
  // tensors are left undefined).
  at::Tensor full_logp_old;  // [B, T, V]
  at::Tensor full_logp_new;  // [B, T, V]
  int64_t vocab = 0;         // the vocabulary size (top-K: K must not exceed it)
  // The acceptance draw: uniforms in [0, 1), [B, T], used instead of the
  // seed's. A caller that splits a batch into micro-batches keys them per
  // sample, so that every split accepts the same tokens. Undefined: drawn
  // from the seed.
  at::Tensor draws;
};

struct SisResult {
  at::Tensor log_ratio;        // [B, T] log w_t, with gradient
  at::Tensor log_envelope;     // [B, T] log M_t, no gradient
  at::Tensor accept_prob;      // [B, T] min(1, w_t / M_t); 0 outside V_K and on padding
  at::Tensor accepted;         // [B, T] bool
  double acceptance_rate = 0;  // over real tokens
};

/// The acceptance test. InvalidArgument naming the tensor and its shape for
/// mismatched shapes, K larger than the vocabulary, or a non-finite
/// log-probability at a real token.
StatusOr<SisResult> sis_accept(const SisInputs& inputs, uint64_t seed);

/// Per-token weights for a loss: exp(log w - stop_gradient(log w)) (value 1,
/// gradient of log pi_theta) where accepted, `base_weight` elsewhere, 0 on
/// padding. `base_weight` [B, T] is the base algorithm's own (clipped,
/// truncated, ...) weight of each token.
at::Tensor sis_weights(const SisResult& result, const at::Tensor& base_weight, const at::Tensor& mask = {});

}  // namespace clustertwin::real::sis
