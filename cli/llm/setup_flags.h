#pragma once

// The flags of `sim llm` and `plan llm` that set the LLM twin's setup
// (sim/llm/llm_twin.h): its library names a field in its messages
// ("micro_batch 4: ..."), the commands name the flag that set it
// ("--micro-batch 4: ...").

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/command.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::cli {

inline Status in_llm_flag_words(const Status& status) {
  return in_flag_words(status, {{"tp", "--tp"},
                                {"pp", "--pp"},
                                {"dp", "--dp"},
                                {"micro_batch", "--micro-batch"},
                                {"global_batch", "--global-batch"},
                                {"hidden", "--hidden"},
                                {"heads", "--heads"},
                                {"kv_heads", "--kv-heads"},
                                {"ffn", "--ffn"},
                                {"layers", "--layers"},
                                {"seq", "--seq"},
                                {"vocab", "--vocab"},
                                {"virtual_stages", "--virtual-stages"},
                                {"zero", "--zero"},
                                {"precision", "--precision"},
                                {"grad_reduce", "--grad-reduce"},
                                {"device_profile", "--device-profile"},
                                {"workers", "--workers"}});
}

/// The model's flags (--hidden, --heads, ...), shared by `sim llm` and `plan llm`.
inline void add_llm_model_flags(CLI::App* cmd, sim::llm::LlmSetup* s) {
  cmd->add_option("--hidden", s->model.hidden, "Hidden size h")->capture_default_str();
  cmd->add_option("--heads", s->model.heads, "Attention (query) heads")->capture_default_str();
  cmd->add_option("--kv-heads", s->model.kv_heads, "Key/value heads, grouped-query attention (0: --heads)")
      ->capture_default_str();
  cmd->add_option("--ffn", s->model.ffn, "MLP width (0: 4 x --hidden)")->capture_default_str();
  cmd->add_flag("--gated-mlp", s->model.gated_mlp, "SwiGLU MLP: gate, up and down matrices (Llama)");
  cmd->add_option("--layers", s->model.layers, "Transformer layers")->capture_default_str();
  cmd->add_option("--seq", s->model.seq, "Sequence length, tokens")->capture_default_str();
  cmd->add_option("--vocab", s->model.vocab, "Vocabulary size")->capture_default_str();
  cmd->add_option("--device-profile", s->device_profile,
                  "Price GEMMs and attention by a device profile's measured curves (h200, or a YAML file); default: "
                  "the platform's fitted llm/* costs (calibrate steps), else assumed efficiencies");
}

}  // namespace clustertwin::cli
