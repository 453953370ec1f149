// clustertwin sim flowtrain: FlowTrain's twin from the command line.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/flowtrain/setup_flags.h"
#include "common/json.h"
#include "common/progress.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/device_profile.h"
#include "models/cluster/units.h"
#include "sim/flowtrain/flowtrain_twin.h"

namespace clustertwin::cli {
namespace {

struct FlowTrainArgs {
  std::string modes = "all";
  std::string workers = "1024";
  std::string platform = "h100-1024";
  std::string pool = "8GB";
  std::string device_profile;  // "": the assumed efficiencies
  bool efficiency_given = false;
  bool encoders_given = false;  // --encoder-workers: then at least 1 (its default, -1, is the allocator's choice)
  sim::flowtrain::FlowTrainSetup setup;
  std::string trace_dir;
  std::string csv;
  bool json = false;
};

// The JSON's settings before its rows: the platform, the model, the batch and the device's efficiencies.
std::string flowtrain_json_settings(const cluster::ClusterProfile& profile, const FlowTrainArgs& a,
                                    const std::string& device_name, const std::string& device_line) {
  return nlohmann::ordered_json{{"platform", profile.name},
                                {"model", a.setup.model},
                                {"global_batch", a.setup.global_batch},
                                {"micro_batch_tokens", a.setup.micro_batch_tokens},
                                {"device_profile", device_name},
                                {"device", device_line}}
      .dump();
}

Status run_sim_flowtrain(FlowTrainArgs a) {
  // 0 and too many are refused with the workers' range by the setup's check; a negative count would be taken
  // for the default (-1) there.
  if (a.encoders_given && a.setup.encoder_workers < 0) {
    return Status::invalid_argument("encoder_workers " + std::to_string(a.setup.encoder_workers) +
                                    ": must be >= 1 (leave it out for the allocator's split)");
  }
  auto modes = sim::flowtrain::parse_flowtrain_modes(a.modes);
  if (!modes.is_ok()) return modes.status();
  auto workers = parse_workers(a.workers);
  if (!workers.is_ok()) return workers.status();
  auto pool = cluster::parse_quantity(a.pool, cluster::Quantity::kSize);
  if (!pool.is_ok()) return Status::invalid_argument("--pool-memory '" + a.pool + "': " + pool.status().message());
  a.setup.pool_bytes = *pool;
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status();
  std::string device_line = "assumed efficiencies (GEMMs " + format_number("%.2f", a.setup.device.gemm_efficiency) +
                            ", attention " + format_number("%.2f", a.setup.device.attention_efficiency) +
                            " of peak; models/transformer/stack_cost.h)";
  std::string device_name = "assumed";
  if (!a.device_profile.empty()) {
    if (a.efficiency_given) {
      return Status::invalid_argument("--device-profile " + a.device_profile +
                                      ": gives the efficiencies; leave out --gemm-efficiency and "
                                      "--attention-efficiency");
    }
    auto device = cluster::load_device_profile(a.device_profile);
    if (!device.is_ok()) return device.status();
    CT_RETURN_IF_ERROR(sim::flowtrain::use_device_profile(*device, *profile, &a.setup));
    device_line = "measured profile " + device->provenance_line();
    device_name = device->name;
  }
  for (int n : *workers) {
    sim::flowtrain::FlowTrainSetup s = a.setup;
    s.workers = n;
    CT_RETURN_IF_ERROR(sim::flowtrain::validate(s, *profile));
  }
  auto rows = sim::flowtrain::run_flowtrain_modes(
      a.setup, *profile, *modes, *workers, [](const sim::flowtrain::FlowTrainRow& r, int done, int total) {
        show_progress(done == total, "[%d/%d] %s at %d workers: %.2f s per step (%.1f s)", done, total, r.mode.c_str(),
                      r.workers, r.step_s, r.wall_s);
      });
  if (!rows.is_ok()) return rows.status();
  if (!a.trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.trace_dir, ec);
    if (ec) return Status::io_error("--trace-dir " + a.trace_dir + ": " + ec.message());
    for (const sim::flowtrain::FlowTrainRow& r : *rows) {
      CT_RETURN_IF_ERROR(sim::flowtrain::write_flowtrain_trace(
          r, profile->name, a.trace_dir + "/" + r.mode + "-" + std::to_string(r.workers) + ".json"));
    }
  }
  if (!a.csv.empty()) CT_RETURN_IF_ERROR(write_output(a.csv, sim::flowtrain::flowtrain_rows_csv(*rows)));
  if (a.json) {
    return write_output("-", sim::flowtrain::flowtrain_rows_json(
                                 *rows, flowtrain_json_settings(*profile, a, device_name, device_line)));
  }
  std::printf("# clustertwin sim flowtrain: %s, %d samples a step, micro-batches of %lld tokens, on %s\n",
              a.setup.model.c_str(), a.setup.global_batch, static_cast<long long>(a.setup.micro_batch_tokens),
              profile->name.c_str());
  std::printf("# device: %s\n", device_line.c_str());
  std::fputs(sim::flowtrain::flowtrain_rows_table(*rows).c_str(), stdout);
  std::printf(
      "# encoder: encoder workers (0: every worker runs both); layout: backbone TP, PP (/encoder TP); speedup "
      "against monolithic at the same workers; mb_cost: max/mean backbone cost of the step's micro-batches\n");
  if (!a.trace_dir.empty()) {
    std::printf("# traces: %s/MODE-WORKERS.json (https://ui.perfetto.dev)\n", a.trace_dir.c_str());
  }
  return Status::ok();
}

}  // namespace

void add_sim_flowtrain_command(CLI::App& sim, Action* action) {
  auto a = std::make_shared<FlowTrainArgs>();
  CLI::App* cmd = sim.add_subcommand(
      "flowtrain",
      "FlowTrain's twin (arXiv 2606.23087, a reconstruction from its abstract): vision-language model training "
      "steps under three modes, as a SimGrid model on a cluster profile.\n\n"
      "Modes: monolithic (Megatron-style: one TP x PP x DP layout for encoder and backbone, the encoder on each "
      "replica's first pipeline stage, samples dealt equally and packed by tokens), disagg-sync (DistTrain-style: "
      "encoder and backbone workers apart, a lock-step pipeline per replica), flowtrain (decoupled through the "
      "memory pool: encoder workers produce embeddings into the pool, backbone replicas pull micro-batches packed by "
      "LLM cost as soon as their samples are in it, gradients flow back the same way; encoder updates at step "
      "boundaries).\n\n"
      "The split between encoder and backbone workers and each side's TP x PP x DP come from the heterogeneous "
      "allocator: it tries every split N_enc = 1..N-1 and, on each side, every layout that fits the device's memory, "
      "and keeps the one with the highest steady-state rate min(R_enc, R_llm) (throughput matching). "
      "--encoder-workers fixes the split instead.\n\n"
      "Rows: mode, workers, samples_per_s, mfu (model FLOPs: 6 x parameters x tokens plus attention, encoder "
      "included, over devices x peak), speedup (against monolithic), encoder_workers.");
  cmd->add_option("--mode", a->modes, "Modes, comma-separated (monolithic, disagg-sync, flowtrain), or all")
      ->capture_default_str();
  cmd->add_option("--model", a->setup.model,
                  "ENCODER+BACKBONE: 6B+72B or 300M+7B (encoders 300M, 6B; backbones "
                  "0.5B..72B)")
      ->capture_default_str();
  cmd->add_option("--workers", a->workers, "Worker counts, comma-separated")->capture_default_str();
  cmd->add_option("--platform", a->platform, "Shipped profile (h100-1024, ...) or a YAML file")->capture_default_str();
  CLI::Option* encoders = cmd->add_option("--encoder-workers", a->setup.encoder_workers,
                                          "Encoder workers (fixes the split; default: the allocator's choice)");
  cmd->add_option("--global-batch", a->setup.global_batch, "Samples per step")->capture_default_str();
  cmd->add_option("--micro-batch-tokens", a->setup.micro_batch_tokens, "Backbone tokens per packed micro-batch")
      ->capture_default_str();
  cmd->add_option("--pool-memory", a->pool, "Memory-pool room per encoder worker (bounds how far encoders run ahead)")
      ->capture_default_str();
  cmd->add_option("--steps", a->setup.steps, "Steps simulated (the first is warm-up)")->capture_default_str();
  cmd->add_option("--seed", a->setup.data.seed, "Seed of the synthetic dataset")->capture_default_str();
  CLI::Option* gemm =
      cmd->add_option("--gemm-efficiency", a->setup.device.gemm_efficiency,
                      "Share of peak a large GEMM reaches (an assumption; --device-profile measures it instead)")
          ->capture_default_str();
  CLI::Option* attention = cmd->add_option("--attention-efficiency", a->setup.device.attention_efficiency,
                                           "Share of peak fused attention reaches (an assumption)")
                               ->capture_default_str();
  cmd->add_option("--device-profile", a->device_profile,
                  "Measured efficiencies per GEMM shape and attention length: a shipped device profile (h200: "
                  "torch 2.11 eager on an H200) or a YAML file from `clustertwin calibrate device`");
  cmd->add_option("--tp-overlap", a->setup.device.tp_overlap,
                  "Share of the tensor-parallel exchange hidden under GEMMs")
      ->capture_default_str();
  cmd->add_option("--trace-dir", a->trace_dir, "Write each run's last step as a Perfetto trace here");
  cmd->add_option("--csv", a->csv, "Also write the rows as CSV to this file (atomically)");
  cmd->add_flag("--json", a->json, "Print JSON: platform, model and rows");
  cmd->callback([a, action, gemm, attention, encoders] {
    a->efficiency_given = gemm->count() > 0 || attention->count() > 0;
    a->encoders_given = encoders->count() > 0;
    *action = [a] { return in_flowtrain_flag_words(run_sim_flowtrain(*a)); };
  });
}

}  // namespace clustertwin::cli
