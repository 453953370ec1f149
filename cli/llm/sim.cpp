// clustertwin sim llm: the LLM twin from the command line.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/llm/setup_flags.h"
#include "common/progress.h"
#include "models/cluster/cluster_profile.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::cli {
namespace {

struct LlmArgs {
  sim::llm::LlmSetup setup = sim::llm::default_llm_setup();
  std::string platform = "h100-dgx";
  int workers = 1024;
  int dp = 0;  // 0: workers / (tp x pp)
  std::string schedule = "1f1b";
  std::string recompute = "full";
  bool no_overlap = false;
  bool full = false;
  std::string trace_dir;
  bool json = false;
};

// The split's enumerated flags and dp into `a.setup`.
Status read_split_flags(LlmArgs& a) {
  models::llm::Split& s = a.setup.split;
  auto schedule = models::llm::schedule_from_name(a.schedule);
  if (!schedule)
    return Status::invalid_argument("--schedule '" + a.schedule + "': unknown (allowed: 1f1b, interleaved, gpipe)");
  s.schedule = *schedule;
  auto recompute = models::llm::recompute_from_name(a.recompute);
  if (!recompute)
    return Status::invalid_argument("--recompute '" + a.recompute + "': unknown (allowed: none, selective, full)");
  s.recompute = *recompute;
  s.overlap_grad_reduce = !a.no_overlap;
  if (a.workers < 1) return Status::invalid_argument("--workers " + std::to_string(a.workers) + ": must be >= 1");
  if (s.tp < 1) return Status::invalid_argument("--tp " + std::to_string(s.tp) + ": must be >= 1");
  if (s.pp < 1) return Status::invalid_argument("--pp " + std::to_string(s.pp) + ": must be >= 1");
  if (a.dp > 0) {
    s.dp = a.dp;
  } else if (a.workers % (s.tp * s.pp) != 0) {
    return Status::invalid_argument("--workers " + std::to_string(a.workers) + ": not a multiple of --tp " +
                                    std::to_string(s.tp) + " x --pp " + std::to_string(s.pp));
  } else {
    s.dp = a.workers / (s.tp * s.pp);
  }
  return Status::ok();
}

Status run_sim_llm(LlmArgs a) {
  CT_RETURN_IF_ERROR(read_split_flags(a));
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status().with_context("--platform");
  sim::SimOptions options = sim::llm::llm_sim_options(a.workers);
  options.symmetric = !a.full;
  if (!a.trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.trace_dir, ec);
    if (ec) return Status::io_error("--trace " + a.trace_dir + ": " + ec.message());
    options.trace_out = a.trace_dir + "/llm-" + std::to_string(a.workers) + ".json";
  }
  CT_RETURN_IF_ERROR(sim::llm::check_llm(a.setup, *profile, a.workers));
  if (!a.json) show_progress(false, "simulating %d GPUs of %s", a.workers, profile->name.c_str());
  auto result = sim::llm::simulate_llm(a.setup, *profile, options);
  if (!a.json) show_progress(true, "simulated %d GPUs", a.workers);
  if (!result.is_ok()) return result.status();
  if (a.json) return write_output("-", sim::llm::llm_result_json(a.setup, *profile, *result));
  std::fputs(sim::llm::llm_result_text(a.setup, *profile, *result).c_str(), stdout);
  if (!options.trace_out.empty())
    std::printf("# trace: %s (open in https://ui.perfetto.dev)\n", options.trace_out.c_str());
  return Status::ok();
}

}  // namespace

void add_sim_llm_command(CLI::App& sim, Action* action) {
  auto a = std::make_shared<LlmArgs>();
  CLI::App* cmd = sim.add_subcommand(
      "llm",
      "One training step of a dense decoder-only transformer (GPT, Llama) split over GPUs with tensor (--tp), "
      "pipeline (--pp) and data (--dp) parallelism, as a step plan every GPU runs: its passes priced per layer "
      "on the device, its tensor-parallel all-reduces, pipeline sends and receives and gradient reductions moved "
      "on the profile's network. Prints step time, MFU, tokens/s, where a GPU's step goes (compute, exposed TP, "
      "pipeline bubble, exposed DP, optimizer) and its memory; refuses a split that does not fit the device.\n\n"
      "Defaults: GPT-3 175B on 1,024 GPUs of h100-dgx, tp 8, pp 16, micro-batch 1, global batch 1,536, 1F1B, "
      "full recomputation. Kernel efficiencies: --device-profile, else the platform's fitted llm/* costs "
      "(clustertwin calibrate steps), else assumptions (GEMMs 80%, attention 55% of peak).");
  cmd->add_option("--platform", a->platform, "Shipped profile (h100-dgx, a100-dgx, h200-dgx, ...) or a YAML file")
      ->capture_default_str();
  cmd->add_option("--workers", a->workers, "GPUs")->capture_default_str();
  cmd->add_option("--tp", a->setup.split.tp, "Tensor-parallel degree")->capture_default_str();
  cmd->add_option("--pp", a->setup.split.pp, "Pipeline stages")->capture_default_str();
  cmd->add_option("--dp", a->dp, "Data-parallel degree (default: --workers / (--tp x --pp))");
  cmd->add_option("--micro-batch", a->setup.split.micro_batch, "Sequences per micro-batch")->capture_default_str();
  cmd->add_option("--global-batch", a->setup.split.global_batch, "Sequences per step")->capture_default_str();
  add_llm_model_flags(cmd, &a->setup);
  cmd->add_option("--recompute", a->recompute, "Activation recomputation: none, selective, full")
      ->capture_default_str();
  cmd->add_option("--schedule", a->schedule, "Pipeline schedule: 1f1b, interleaved, gpipe")->capture_default_str();
  cmd->add_option("--virtual-stages", a->setup.split.virtual_stages, "Chunks per stage (--schedule interleaved)")
      ->capture_default_str();
  cmd->add_option("--zero", a->setup.split.zero, "1: the distributed optimizer (reduce-scatter + all-gather)")
      ->capture_default_str();
  cmd->add_flag("--sequence-parallel", a->setup.split.sequence_parallel,
                "Sequence parallelism: norms and activations split over the TP group");
  cmd->add_flag("--no-overlap-grad-reduce", a->no_overlap,
                "Reduce gradients after the last backward, not bucket by bucket during it");
  cmd->add_option("--precision", a->setup.split.precision, "bf16, fp16, or fp8 (the GEMMs in fp8)")
      ->capture_default_str();
  cmd->add_option("--grad-reduce", a->setup.split.grad_reduce,
                  "Gradients kept and reduced in fp32 (Megatron-LM's default) or bf16 (NeMo's)")
      ->capture_default_str();
  cmd->add_flag("--full", a->full,
                "Simulate every GPU (default: one per node when a node's GPUs provably agree: --tp a multiple of the "
                "node's GPUs)");
  cmd->add_option("--trace", a->trace_dir, "Write the simulated step as a Perfetto trace here: llm-WORKERS.json");
  cmd->add_flag("--json", a->json,
                "Print JSON: step_s, mfu, tokens_per_s, breakdown, memory_gib per GPU, the model and the split");
  cmd->callback([a, action] { *action = [a] { return in_sim_option_words(in_llm_flag_words(run_sim_llm(*a))); }; });
}

}  // namespace clustertwin::cli
