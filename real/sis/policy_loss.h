#pragma once

// The policy losses SIS plugs into (../shared/papers/sis.md), each with and
// without SIS, with normalisation that is correct across micro-batches:
//
//   ppo / grpo   token-level clipped ratio, (1/G) sum_i (1/|o_i|) sum_t
//   dapo         asymmetric clip (eps_low, eps_high), token mean over the group
//   gspo         sequence ratio s_i = exp(mean_t log r_it) (never exp(sum)), clipped
//   tis          truncated IS: min(r, C) A
//   mis          masked IS: 1[r <= C] r A
//   icepop       r A if r in [low, high], else 0
//   decoupled    decoupled PPO (AReaL): min((pi/mu) A, (pi_prox/mu) clip(pi/pi_prox, 1 +- eps) A)
//
// With SIS, accepted tokens are on-policy: their log-ratio to the behaviour
// policy becomes log w - stop_gradient(log w) (value 0, gradient of log pi),
// and every objective is then computed as without it; rejected tokens keep
// the base algorithm's treatment.
//
// The loss returned is -J, to minimise. Sequence-normalised objectives (ppo,
// gspo, and the IS family) divide by `total_sequences`, token-normalised ones
// (dapo) by `total_tokens`: the counts of the whole batch, so that summing
// the losses of its micro-batches gives the whole batch's loss (tested).

#include <ATen/ATen.h>

#include <string>

#include "common/status.h"
#include "real/sis/selective_sampling.h"

namespace clustertwin::real::sis {

enum class LossKind { kPpo, kDapo, kGspo, kTis, kMis, kIcePop, kDecoupled };

/// "ppo", "dapo", "gspo", "tis", "mis", "icepop", "decoupled"; and back
/// (InvalidArgument listing them; "grpo" is ppo).
const char* loss_kind_name(LossKind kind);
StatusOr<LossKind> loss_kind_from_name(const std::string& name);

struct LossOptions {
  LossKind kind = LossKind::kPpo;
  double eps = 0.2;                       // ppo, gspo, decoupled
  double eps_low = 0.2, eps_high = 0.28;  // dapo
  double cap = 2.0;                       // tis, mis
  double icepop_low = 0.5, icepop_high = 5.0;
  bool sis = false;
  uint64_t seed = 0;  // SIS's draw
  // The draw is redone each epoch (a seed mixed with `epoch`) or kept for
  // every epoch over the same batch (`seed` alone): the paper leaves it open.
  bool sis_redraw_each_epoch = true;
  int64_t epoch = 0;
};

/// The seed of SIS's draw in `options.epoch`.
uint64_t sis_draw_seed(const LossOptions& options);

struct LossBatch {
  SisInputs tokens;  // logp_new, logp_old (the behaviour policy), mask, and SIS's envelope
  // Which ratio SIS tests (the paper leaves it open). Left empty, `tokens`:
  // the policy lag pi_theta / pi_old. Filled with logp_new and the rollout
  // engine's log-probabilities (and the envelope over the engine's top-K):
  // the trainer-versus-engine ratio. Accepted tokens are on-policy in the
  // base loss either way.
  SisInputs sis_test;
  at::Tensor advantages;        // [B]: each sequence's advantage (GRPO: normalised by the caller over its group)
  at::Tensor logp_prox;         // [B, T]: the proximal policy (decoupled only)
  int64_t total_sequences = 0;  // 0: this batch's
  int64_t total_tokens = 0;     // 0: this batch's real tokens
};

struct LossResult {
  at::Tensor loss;             // scalar, -J
  double acceptance_rate = 0;  // SIS only
  double clip_fraction = 0;    // tokens (sequences for gspo) whose clip was active
};

StatusOr<LossResult> policy_loss(const LossBatch& batch, const LossOptions& options);

/// GSPO's sequence ratio: exp(mean of log_ratio over each row's real tokens), [B].
at::Tensor gspo_sequence_ratio(const at::Tensor& log_ratio, const at::Tensor& mask);

}  // namespace clustertwin::real::sis
