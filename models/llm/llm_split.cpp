#include "models/llm/llm_split.h"

#include <algorithm>

namespace clustertwin::models::llm {

using transformer::Transformer;

std::string_view schedule_name(Schedule s) {
  switch (s) {
    case Schedule::kOneFOneB:
      return "1f1b";
    case Schedule::kInterleaved:
      return "interleaved";
    case Schedule::kGpipe:
      return "gpipe";
  }
  return "1f1b";
}

std::optional<Schedule> schedule_from_name(std::string_view name) {
  for (Schedule s : {Schedule::kOneFOneB, Schedule::kInterleaved, Schedule::kGpipe}) {
    if (schedule_name(s) == name) return s;
  }
  return std::nullopt;
}

std::string_view recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "full";
}

std::optional<Recompute> recompute_from_name(std::string_view name) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (recompute_name(r) == name) return r;
  }
  return std::nullopt;
}

double gradient_bytes(const Split& split) {
  return split.grad_reduce == "bf16" ? 2.0 : 4.0;
}

int64_t micro_batches(const Split& split) {
  return split.global_batch / (split.micro_batch * split.dp);
}

int64_t chunk_layers(const Transformer& model, const Split& split) {
  return model.layers / (int64_t{split.pp} * split.virtual_stages);
}

namespace {

Status bad(const std::string& field, int64_t value, const std::string& why) {
  return Status::invalid_argument(field + " " + std::to_string(value) + ": " + why);
}

Status check_model(const Transformer& m) {
  if (m.hidden < 1) return bad("hidden", m.hidden, "must be >= 1");
  if (m.heads < 1) return bad("heads", m.heads, "must be >= 1");
  if (m.hidden % m.heads != 0) return bad("heads", m.heads, "does not divide hidden " + std::to_string(m.hidden));
  if (m.kv_heads < 0 || (m.kv_heads > 0 && m.heads % m.kv_heads != 0))
    return bad("kv_heads", m.kv_heads, "must divide heads " + std::to_string(m.heads));
  if (m.ffn < 0) return bad("ffn", m.ffn, "must be >= 1 (or 0: 4 x hidden)");
  if (m.layers < 1) return bad("layers", m.layers, "must be >= 1");
  if (m.seq < 1) return bad("seq", m.seq, "must be >= 1");
  if (m.vocab < 1) return bad("vocab", m.vocab, "must be >= 1");
  return Status::ok();
}

}  // namespace

Status check_split(const Transformer& m, const Split& s, int workers) {
  CT_RETURN_IF_ERROR(check_model(m));
  if (s.tp < 1) return bad("tp", s.tp, "must be >= 1");
  if (s.pp < 1) return bad("pp", s.pp, "must be >= 1");
  if (s.dp < 1) return bad("dp", s.dp, "must be >= 1");
  if (int64_t{s.tp} * s.pp * s.dp != workers) {
    return bad("dp", s.dp,
               "tp " + std::to_string(s.tp) + " x pp " + std::to_string(s.pp) + " x dp " + std::to_string(s.dp) +
                   " is not the worker count " + std::to_string(workers));
  }
  if (m.heads % s.tp != 0) return bad("tp", s.tp, "does not divide heads " + std::to_string(m.heads));
  if (kv_heads_of(m) % s.tp != 0 && s.tp % kv_heads_of(m) != 0)
    return bad("tp", s.tp, "and kv_heads " + std::to_string(kv_heads_of(m)) + ": neither divides the other");
  if (ffn_of(m) % s.tp != 0) return bad("tp", s.tp, "does not divide ffn " + std::to_string(ffn_of(m)));
  if (s.virtual_stages < 1) return bad("virtual_stages", s.virtual_stages, "must be >= 1");
  if (s.schedule != Schedule::kInterleaved && s.virtual_stages != 1)
    return bad("virtual_stages", s.virtual_stages, "needs schedule interleaved");
  if (s.virtual_stages > 1 && s.pp < 2) return bad("virtual_stages", s.virtual_stages, "needs pp >= 2");
  if (m.layers % (int64_t{s.pp} * s.virtual_stages) != 0) {
    return bad("layers", m.layers,
               "do not divide into pp " + std::to_string(s.pp) + " x virtual_stages " +
                   std::to_string(s.virtual_stages) + " equal chunks");
  }
  if (s.micro_batch < 1 || s.micro_batch > (int64_t{1} << 31))
    return bad("micro_batch", s.micro_batch, "must be in [1, 2^31]");
  if (s.global_batch < 1 || s.global_batch % (s.micro_batch * s.dp) != 0) {
    return bad("global_batch", s.global_batch,
               "is not a multiple of micro_batch " + std::to_string(s.micro_batch) + " x dp " + std::to_string(s.dp));
  }
  // Each micro-batch is a forward and a backward task per stage: the plan's size, bounded before it is built.
  constexpr int64_t kMostMicroBatches = 65536;
  if (micro_batches(s) > kMostMicroBatches) {
    return bad("global_batch", s.global_batch,
               "gives " + std::to_string(micro_batches(s)) + " micro-batches per pipeline, more than the limit of " +
                   std::to_string(kMostMicroBatches));
  }
  if (s.schedule == Schedule::kInterleaved && micro_batches(s) % s.pp != 0) {
    return bad("global_batch", s.global_batch,
               "gives " + std::to_string(micro_batches(s)) + " micro-batches, not a multiple of pp " +
                   std::to_string(s.pp) + " (the interleaved schedule's groups)");
  }
  if (s.zero != 0 && s.zero != 1) return bad("zero", s.zero, "must be 0 or 1");
  if (s.grad_reduce != "fp32" && s.grad_reduce != "bf16")
    return Status::invalid_argument("grad_reduce '" + s.grad_reduce + "': unknown (allowed: fp32, bf16)");
  if (s.precision != "bf16" && s.precision != "fp16" && s.precision != "fp8")
    return Status::invalid_argument("precision '" + s.precision + "': unknown (allowed: bf16, fp16, fp8)");
  return Status::ok();
}

double chunk_parameters(const Transformer& m, const Split& s, int virtual_stage) {
  double parameters = static_cast<double>(chunk_layers(m, s)) * static_cast<double>(transformer::layer_parameters(m));
  if (virtual_stage == 0) parameters += static_cast<double>(transformer::embedding_parameters(m));
  const int last = s.pp * s.virtual_stages - 1;
  if (s.pp > 1 && virtual_stage == last) parameters += static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  return parameters / s.tp;
}

double stage_parameters(const Transformer& m, const Split& s, int stage) {
  double parameters = 0;
  for (int chunk = 0; chunk < s.virtual_stages; ++chunk)
    parameters += chunk_parameters(m, s, chunk * s.pp + stage);
  return parameters;
}

double layer_activation_bytes(const Transformer& m, const Split& s) {
  const double sbh = static_cast<double>(m.seq) * static_cast<double>(s.micro_batch) * static_cast<double>(m.hidden);
  const double t = s.tp;
  const bool sp = s.sequence_parallel || s.tp == 1;
  const double scores = s.fused_attention ? 0.0
                                          : 5.0 * static_cast<double>(m.heads) * static_cast<double>(m.seq) /
                                                static_cast<double>(m.hidden);
  switch (s.recompute) {
    case Recompute::kFull:
      return 2 * sbh / (sp ? t : 1);
    case Recompute::kSelective:
      return sp ? sbh * transformer::kActivationBytesPerTokenAndHidden / t : sbh * (10 + 24 / t);
    case Recompute::kNone:
      break;
  }
  return sp ? sbh * (transformer::kActivationBytesPerTokenAndHidden + scores) / t : sbh * (10 + 24 / t + scores / t);
}

GpuMemory gpu_memory(const Transformer& m, const Split& s) {
  const double params = stage_parameters(m, s, 0);
  GpuMemory g;
  g.weights = 2 * params;
  g.gradients = gradient_bytes(s) * params;
  g.optimizer = (s.zero == 1 ? 12.0 / s.dp : 12.0) * params;
  const double stage_layers = static_cast<double>(m.layers) / s.pp;
  const double m_batches = static_cast<double>(micro_batches(s));
  double in_flight = std::min<double>(s.pp, m_batches);
  if (s.schedule == Schedule::kGpipe) in_flight = m_batches;
  if (s.schedule == Schedule::kInterleaved)
    in_flight *= 1 + (s.pp - 1.0) / (static_cast<double>(s.pp) * s.virtual_stages);
  g.activations = stage_layers * in_flight * layer_activation_bytes(m, s);
  if (s.recompute == Recompute::kFull) {
    Split none = s;
    none.recompute = Recompute::kNone;
    g.activations += layer_activation_bytes(m, none);  // the layer being recomputed
  }
  return g;
}

}  // namespace clustertwin::models::llm
