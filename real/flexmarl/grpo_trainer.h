#pragma once

// FlexMARL's training engine for one agent (../shared/papers/flexmarl.md):
// the micro-batch asynchronous pipeline's trainer side.
//
//   accumulate(micro-batch)   forward and backward as soon as a micro-batch of
//                             rewarded samples is ready; gradients add up
//   step(group)               once the whole global batch is in: gradients
//                             summed over the trainer ranks, one Adam step,
//                             the policy version advances
//
// The update equals the synchronous full-batch one: every micro-batch's loss
// is normalised by the whole batch's sequence and token counts (the policy
// losses of real/sis take them), so the sum of the micro-batch gradients is
// the full batch's gradient; advantages (GRPO's group statistics) are fixed
// before any micro-batch is used.
//
// The state (parameters, accumulated gradients, Adam's moments and step) is
// one flat tensor through pack_state/unpack_state: the location-agnostic
// transfer the state swap uses, whether the other side is host memory or
// another process. Adam is our own few lines for that reason: its state is
// ours to lay out.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "models/flexmarl/orchestrator.h"
#include "models/torch/byte_lm.h"
#include "real/core/communicator.h"
#include "real/sis/policy_loss.h"

namespace clustertwin::real::flexmarl {

using models::nets::ByteLm;
using models::nets::ByteLmOptions;
using models::nets::make_byte_lm;

/// One rolled-out, rewarded sample as the trainer sees it.
struct TrainSample {
  at::Tensor tokens;          // [T] int64: the prompt, then the response
  int64_t prompt_tokens = 0;  // >= 1
  at::Tensor logp_old;        // [T - 1]: the behaviour policy's log-probability of token t + 1 at position t
  double advantage = 0;       // fixed before the sample is used
  uint64_t id = 0;            // the sample's key (a hash of input_turn_trajectory): SIS's draw for it
  // SIS's top-K envelope, from the rollout engine: at each position the
  // behaviour policy's K most likely next tokens and their log-probabilities
  // ([T - 1, K] each; needed only with SIS).
  at::Tensor topk_ids;
  at::Tensor topk_logp_old;
};

using clustertwin::models::flexmarl::group_advantages;  // models/flexmarl/orchestrator.h

/// What the whole global batch holds, for the losses' normalisation.
struct BatchTotals {
  int64_t sequences = 0;
  int64_t tokens = 0;  // response tokens
};
BatchTotals batch_totals(const std::vector<TrainSample>& batch);

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

/// One agent's trainer. Its parameters, Adam's moments, the gradients and
/// the activations live where the model's parameters are (a worker moves the
/// model to its device first); samples may come in host memory, and a
/// micro-batch is padded on the host and uploaded whole.
class AgentTrainer {
 public:
  AgentTrainer(ByteLm model, AdamOptions adam, sis::LossOptions loss);

  /// Forward and backward of one micro-batch; gradients accumulate. Returns
  /// the micro-batch's share of the batch loss. InvalidArgument naming the
  /// sample for a malformed one (shapes, prompt length, context).
  StatusOr<double> accumulate(const std::vector<TrainSample>& micro_batch, const BatchTotals& totals);

  /// Sums the accumulated gradients over `group` (nullptr: this rank alone),
  /// multiplies the sum by `grad_scale` (a caller that accumulated with
  /// totals of 1 scales by the batch's real count here, once it is known),
  /// takes one Adam step, clears the gradients, advances the version.
  Status step(Communicator* comm, Group* group, double grad_scale = 1.0);

  int64_t version() const { return version_; }
  /// The gradient the last step applied (summed over the group, scaled), flat.
  const at::Tensor& last_gradient() const { return last_gradient_; }
  ByteLm& model() { return model_; }

  /// Parameters, gradients, Adam's two moments, its step count and the
  /// policy version, flat, on the trainer's device.
  at::Tensor pack_state() const;
  /// `state` from any device (host memory: one upload, asynchronous from
  /// pinned memory). InvalidArgument when it is not this trainer's layout.
  Status unpack_state(const at::Tensor& state);
  /// Elements of pack_state().
  int64_t state_numel() const;

 private:
  std::vector<at::Tensor> params() const;

  ByteLm model_;
  AdamOptions adam_;
  sis::LossOptions loss_;
  std::vector<at::Tensor> m_, v_;
  int64_t adam_step_ = 0;
  int64_t version_ = 0;
  at::Tensor last_gradient_;
};

/// A model's parameters, flat: what a weight publish sends.
at::Tensor flat_params(const ByteLm& model);
/// Copies `flat` (flat_params' layout, on any device) into the model's
/// parameters; InvalidArgument when the element count or type differs.
Status load_flat_params(ByteLm& model, const at::Tensor& flat);

/// Per-token log-probabilities of each next token: logits of `model` on
/// tokens[:, :-1], gathered at tokens[:, 1:] -> [B, T - 1].
at::Tensor next_token_logp(ByteLm& model, const at::Tensor& tokens);

/// SIS's acceptance draws of one sample: T - 1 uniforms from its id and the
/// loss's draw seed, whatever micro-batch it lands in.
at::Tensor sample_draws(uint64_t id, uint64_t draw_seed, int64_t positions);

}  // namespace clustertwin::real::flexmarl
