#include "real/sis/policy_loss.h"

#include "common/hash.h"

namespace clustertwin::real::sis {
namespace {

struct LossName {
  LossKind kind;
  const char* name;
};
constexpr LossName kLossNames[] = {
    {LossKind::kPpo, "ppo"}, {LossKind::kDapo, "dapo"},     {LossKind::kGspo, "gspo"},          {LossKind::kTis, "tis"},
    {LossKind::kMis, "mis"}, {LossKind::kIcePop, "icepop"}, {LossKind::kDecoupled, "decoupled"}};

}  // namespace

const char* loss_kind_name(LossKind kind) {
  for (const LossName& n : kLossNames) {
    if (n.kind == kind) return n.name;
  }
  return "?";
}

StatusOr<LossKind> loss_kind_from_name(const std::string& name) {
  if (name == "grpo") return LossKind::kPpo;
  for (const LossName& n : kLossNames) {
    if (name == n.name) return n.kind;
  }
  return Status::invalid_argument("loss '" + name + "': unknown (allowed: ppo, grpo, dapo, gspo, tis, mis, icepop, " +
                                  "decoupled)");
}

uint64_t sis_draw_seed(const LossOptions& o) {
  return o.sis_redraw_each_epoch ? mix64(o.seed ^ mix64(static_cast<uint64_t>(o.epoch) + 1)) : o.seed;
}

at::Tensor gspo_sequence_ratio(const at::Tensor& log_ratio, const at::Tensor& mask) {
  const at::Tensor m = mask.to(log_ratio.scalar_type());
  const at::Tensor lengths = m.sum(1).clamp_min(1);
  return at::exp((log_ratio * m).sum(1) / lengths);
}

StatusOr<LossResult> policy_loss(const LossBatch& batch, const LossOptions& o) {
  const SisInputs& in = batch.tokens;
  if (!in.logp_new.defined() || in.logp_new.dim() != 2)
    return Status::invalid_argument("policy loss: logp_new must be [B, T]");
  const int64_t b = in.logp_new.size(0), t = in.logp_new.size(1);
  if (!batch.advantages.defined() || batch.advantages.sizes() != at::IntArrayRef{b})
    return Status::invalid_argument("policy loss: advantages must be [" + std::to_string(b) + "], one per sequence");
  const at::Tensor mask =
      in.mask.defined() ? in.mask.to(in.logp_new.scalar_type()) : at::ones({b, t}, in.logp_new.options());
  LossResult result;
  at::Tensor log_ratio = in.logp_new - in.logp_old.detach();  // log pi / mu
  at::Tensor accepted = at::zeros({b, t}, in.logp_new.options().dtype(at::kBool));
  if (o.sis) {
    const SisInputs& tested = batch.sis_test.logp_new.defined() ? batch.sis_test : in;
    if (tested.logp_new.sizes() != in.logp_new.sizes())
      return Status::invalid_argument("policy loss: sis_test's logp_new must be shaped like logp_new");
    auto r = sis_accept(tested, sis_draw_seed(o));
    if (!r.is_ok()) return r.status();
    accepted = r->accepted;
    result.acceptance_rate = r->acceptance_rate;
    log_ratio = at::where(accepted, log_ratio - log_ratio.detach(), log_ratio);
  }
  // Masked entries may hold anything (padding): keep them out of every exp.
  log_ratio = at::where(mask > 0, log_ratio, at::zeros_like(log_ratio));
  const at::Tensor ratio = at::exp(log_ratio);
  const at::Tensor a = batch.advantages.detach().unsqueeze(1).to(ratio.scalar_type());  // [B, 1]
  const double sequences = static_cast<double>(batch.total_sequences > 0 ? batch.total_sequences : b);
  const double tokens = static_cast<double>(batch.total_tokens > 0 ? batch.total_tokens : mask.sum().item<int64_t>());
  const at::Tensor lengths = mask.sum(1).clamp_min(1);
  auto sequence_mean = [&](const at::Tensor& per_token) {
    return ((per_token * mask).sum(1) / lengths).sum() / sequences;
  };
  auto clipped = [&](const at::Tensor& r, double low, double high) {
    const at::Tensor unclipped = r * a, clip = at::clamp(r, 1 - low, 1 + high) * a;
    return std::make_pair(at::minimum(unclipped, clip), (clip < unclipped));
  };
  at::Tensor objective, clip_active;
  switch (o.kind) {
    case LossKind::kPpo: {
      auto [j, active] = clipped(ratio, o.eps, o.eps);
      objective = sequence_mean(j);
      clip_active = active;
      break;
    }
    case LossKind::kDapo: {
      auto [j, active] = clipped(ratio, o.eps_low, o.eps_high);
      objective = (j * mask).sum() / tokens;
      clip_active = active;
      break;
    }
    case LossKind::kGspo: {
      const at::Tensor s = gspo_sequence_ratio(log_ratio, mask);  // [B]
      const at::Tensor a1 = a.squeeze(1);
      const at::Tensor unclipped = s * a1, clip = at::clamp(s, 1 - o.eps, 1 + o.eps) * a1;
      objective = at::minimum(unclipped, clip).sum() / sequences;
      result.clip_fraction = (clip < unclipped).to(at::kDouble).mean().item<double>();
      break;
    }
    case LossKind::kTis:
      objective = sequence_mean(at::clamp_max(ratio, o.cap) * a);
      break;
    case LossKind::kMis:
      objective = sequence_mean(at::where(ratio <= o.cap, ratio, at::zeros_like(ratio)) * a);
      break;
    case LossKind::kIcePop:
      objective = sequence_mean(
          at::where((ratio >= o.icepop_low) & (ratio <= o.icepop_high), ratio, at::zeros_like(ratio)) * a);
      break;
    case LossKind::kDecoupled: {
      if (!batch.logp_prox.defined() || batch.logp_prox.sizes() != in.logp_new.sizes())
        return Status::invalid_argument("policy loss: decoupled needs logp_prox shaped like logp_new");
      // pi_prox / mu (no gradient; 1 for SIS-accepted tokens, which count as drawn on-policy).
      at::Tensor prox_over_behaviour = at::exp((batch.logp_prox - in.logp_old).detach());
      prox_over_behaviour = at::where(accepted | (mask <= 0), at::ones_like(prox_over_behaviour), prox_over_behaviour);
      const at::Tensor over_prox =
          at::exp(at::where(mask > 0, in.logp_new - batch.logp_prox.detach(), at::zeros_like(ratio)));
      const at::Tensor unclipped = ratio * a;
      const at::Tensor clip = prox_over_behaviour * at::clamp(over_prox, 1 - o.eps, 1 + o.eps) * a;
      objective = sequence_mean(at::minimum(unclipped, clip));
      clip_active = clip < unclipped;
      break;
    }
  }
  if (clip_active.defined()) {
    const at::Tensor active = clip_active & (mask > 0);
    result.clip_fraction = active.sum().item<double>() / std::max(1.0, mask.sum().item<double>());
  }
  result.loss = -objective;
  return result;
}

}  // namespace clustertwin::real::sis
