// What `sim llm` prints: the result as JSON (--json) or as text.

#include <cstdio>

#include "common/json.h"
#include "common/text.h"
#include "models/transformer/transformer.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::sim::llm {
namespace {

nlohmann::ordered_json model_json(const models::transformer::Transformer& m) {
  return {{"hidden", m.hidden},
          {"heads", m.heads},
          {"kv_heads", models::transformer::kv_heads_of(m)},
          {"ffn", models::transformer::ffn_of(m)},
          {"gated_mlp", m.gated_mlp},
          {"layers", m.layers},
          {"seq", m.seq},
          {"vocab", m.vocab},
          {"parameters", models::transformer::parameter_count(m)}};
}

}  // namespace

nlohmann::ordered_json llm_split_json(const models::llm::Split& s) {
  return {{"tp", s.tp},
          {"pp", s.pp},
          {"dp", s.dp},
          {"micro_batch", s.micro_batch},
          {"global_batch", s.global_batch},
          {"micro_batches", models::llm::micro_batches(s)},
          {"schedule", models::llm::schedule_name(s.schedule)},
          {"virtual_stages", s.virtual_stages},
          {"recompute", models::llm::recompute_name(s.recompute)},
          {"zero", s.zero},
          {"sequence_parallel", s.sequence_parallel},
          {"overlap_grad_reduce", s.overlap_grad_reduce},
          {"precision", s.precision},
          {"grad_reduce", s.grad_reduce}};
}

std::string llm_result_json(const LlmSetup& setup, const cluster::ClusterProfile& profile, const LlmResult& r) {
  const LlmBreakdown& b = r.breakdown;
  const models::llm::GpuMemory& m = r.memory;
  nlohmann::ordered_json doc{{"system", "llm"},
                             {"platform", profile.name},
                             {"workers", r.sim.workers},
                             {"model", model_json(setup.model)},
                             {"split", llm_split_json(setup.split)},
                             {"rates", r.rates_source},
                             {"step_s", r.step_s},
                             {"mfu", r.mfu},
                             {"tokens_per_s", r.tokens_per_s},
                             {"model_flops", r.model_flops},
                             {"breakdown",
                              {{"compute_s", b.compute_s},
                               {"exposed_tp_s", b.exposed_tp_s},
                               {"bubble_s", b.bubble_s},
                               {"exposed_dp_s", b.exposed_dp_s},
                               {"optimizer_s", b.optimizer_s}}},
                             {"memory_gib",
                              {{"weights", m.weights / kGiB},
                               {"gradients", m.gradients / kGiB},
                               {"optimizer", m.optimizer / kGiB},
                               {"activations", m.activations / kGiB},
                               {"total", m.total() / kGiB},
                               {"capacity", r.memory_capacity / kGiB}}},
                             {"simulation",
                              {{"simulated_workers", r.sim.simulated_workers},
                               {"events", r.sim.events},
                               {"fidelity", r.sim.fidelity == Fidelity::kFlow ? "flow" : "step"},
                               {"wall_s", r.sim.wall_s}}}};
  return json_document(doc, 2);
}

std::string llm_result_text(const LlmSetup& setup, const cluster::ClusterProfile& profile, const LlmResult& r) {
  const models::llm::Split& s = setup.split;
  const LlmBreakdown& b = r.breakdown;
  const double step = r.step_s > 0 ? r.step_s : 1;
  auto share = [&](double part) {
    return format_number("%.3f", part) + " s (" + format_number("%.1f", 100 * part / step) + "%)";
  };
  std::string out;
  out += "# clustertwin sim llm: " +
         with_thousands(static_cast<double>(models::transformer::parameter_count(setup.model))) + " parameters on " +
         std::to_string(r.sim.workers) + " GPUs of " + profile.name + "; tp " + std::to_string(s.tp) + " pp " +
         std::to_string(s.pp) + " dp " + std::to_string(s.dp) + ", " +
         std::string(models::llm::schedule_name(s.schedule)) +
         (s.virtual_stages > 1 ? " x" + std::to_string(s.virtual_stages) : "") + ", micro-batch " +
         std::to_string(s.micro_batch) + " of " + std::to_string(models::llm::micro_batches(s)) + ", recompute " +
         std::string(models::llm::recompute_name(s.recompute)) + ", " + s.precision + "\n";
  out += "# kernel efficiencies: " + r.rates_source + "\n";
  out += "step          " + format_number("%.3f", r.step_s) + " s\n";
  out += "MFU           " + format_number("%.1f", 100 * r.mfu) + "%\n";
  out += "tokens/s      " + with_thousands(r.tokens_per_s) + "\n";
  out += "compute       " + share(b.compute_s) + "\n";
  out += "exposed TP    " + share(b.exposed_tp_s) + "\n";
  out += "bubble        " + share(b.bubble_s) + "\n";
  out += "exposed DP    " + share(b.exposed_dp_s) + "\n";
  out += "optimizer     " + share(b.optimizer_s) + "\n";
  const models::llm::GpuMemory& m = r.memory;
  out += "memory/GPU    " + format_number("%.1f", m.total() / kGiB) + " of " +
         format_number("%.1f", r.memory_capacity / kGiB) + " GiB (weights " + format_number("%.1f", m.weights / kGiB) +
         ", gradients " + format_number("%.1f", m.gradients / kGiB) + ", optimizer " +
         format_number("%.1f", m.optimizer / kGiB) + ", activations " + format_number("%.1f", m.activations / kGiB) +
         ")\n";
  out += "# simulated " + std::to_string(r.sim.simulated_workers) + " GPUs, " +
         with_thousands(static_cast<double>(r.sim.events)) + " tasks, in " + format_number("%.2f", r.sim.wall_s) +
         " s\n";
  return out;
}

}  // namespace clustertwin::sim::llm
