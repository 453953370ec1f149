// clustertwin sim flexmarl: FlexMARL's twin from the command line.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "calibrators/flexmarl/flexmarl_paper_fit.h"
#include "cli/command.h"
#include "cli/flexmarl/setup_flags.h"
#include "common/json.h"
#include "common/progress.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/flexmarl/agents.h"
#include "models/flexmarl/frameworks.h"
#include "sim/flexmarl/flexmarl_twin.h"

namespace clustertwin::cli {
namespace {

struct FlexMarlArgs {
  std::string frameworks = "all";
  std::string agents;  // "" for the paper's workload named by `workload`
  std::string workload = "ma";
  std::string platform = "npu-768";
  std::string calibration = "auto";
  double decode_efficiency = 0;  // 0: the device profile's
  std::string device_profile = sim::flexmarl::kDefaultDeviceProfile;
  bool decode_efficiency_given = false;
  bool workers_given = false;  // --workers (or --devices): a count of 0 is then refused, not the default
  int global_batch = 64;
  int micro_batch = 16;
  int group = 16;
  int inter_query = 4;
  int max_response = 8192;
  sim::flexmarl::FlexMarlSetup setup;
  std::string trace_dir;
  std::string csv;
  bool json = false;
};

}  // namespace

namespace {

// The workload and the engines' decode efficiency from the flags, into a.setup; `*measured_on` names the device
// profile the efficiency was measured on ("" when given by --decode-efficiency).
Status read_setup(FlexMarlArgs* a, std::string* measured_on) {
  if (a->agents.empty()) {
    auto paper = models::flexmarl::paper_workload(a->workload);
    if (!paper.is_ok()) return Status::invalid_argument("--workload " + paper.status().message());
    a->setup.workload = std::move(*paper);
  } else {
    auto workload = models::flexmarl::workload_from_agents(a->agents);
    if (!workload.is_ok()) return Status::invalid_argument("--agents " + workload.status().message());
    a->setup.workload = std::move(*workload);
  }
  a->setup.workload.global_batch = a->global_batch;
  a->setup.workload.micro_batch = a->micro_batch;
  a->setup.workload.group = a->group;
  a->setup.workload.inter_query = a->inter_query;
  a->setup.workload.max_response_tokens = a->max_response;
  if (a->workers_given && a->setup.devices < 1) {
    return Status::invalid_argument("workers " + std::to_string(a->setup.devices) +
                                    ": must be >= 1 (leave it out for a node per agent)");
  }
  if (a->decode_efficiency_given) {
    if (!(a->decode_efficiency >= 1e-3 && a->decode_efficiency <= 1)) {
      return Status::invalid_argument("--decode-efficiency " + format_number("%g", a->decode_efficiency) +
                                      ": must be in [0.001, 1] (a share of the memory bandwidth)");
    }
    a->setup.efficiency.decode = a->decode_efficiency;
    return Status::ok();
  }
  auto measured = sim::flexmarl::engine_decode_efficiency(a->device_profile, measured_on);
  if (!measured.is_ok()) return measured.status();
  a->setup.efficiency.decode = *measured;
  return Status::ok();
}

Status run_sim_flexmarl(FlexMarlArgs a) {
  auto frameworks = models::flexmarl::parse_frameworks(a.frameworks);
  if (!frameworks.is_ok()) return frameworks.status();
  std::string measured_on;
  CT_RETURN_IF_ERROR(read_setup(&a, &measured_on));
  auto profile = cluster::load_cluster_profile(a.platform);
  if (!profile.is_ok()) return profile.status();
  CT_RETURN_IF_ERROR(sim::flexmarl::validate(a.setup, *profile));

  std::string fit_json;
  auto efficiency = calibrators::flexmarl_sync_decode_efficiency(a.setup, *profile, a.calibration, &fit_json);
  if (!efficiency.is_ok()) return efficiency.status();
  a.setup.efficiency.sync_decode = *efficiency;
  auto rows = sim::flexmarl::run_flexmarl_frameworks(
      a.setup, *profile, *frameworks, [](const sim::flexmarl::FlexMarlRow& r, int done, int total) {
        show_progress(done == total, "[%d/%d] %s: %.1f s per step (%.1f s)", done, total, r.framework.c_str(), r.step_s,
                      r.wall_s);
      });
  if (!rows.is_ok()) return rows.status();
  if (!a.trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.trace_dir, ec);
    if (ec) return Status::io_error("--trace-dir " + a.trace_dir + ": " + ec.message());
    for (const sim::flexmarl::FlexMarlRow& r : *rows) {
      CT_RETURN_IF_ERROR(
          sim::flexmarl::write_flexmarl_trace(r, profile->name, a.trace_dir + "/" + r.framework + ".json"));
    }
  }
  if (!a.csv.empty()) CT_RETURN_IF_ERROR(write_output(a.csv, sim::flexmarl::flexmarl_rows_csv(*rows)));
  const auto six_digits = [](double v) { return std::stod(format_number("%.6g", v)); };  // as the table shows it
  const nlohmann::ordered_json extra = {{"platform", profile->name},
                                        {"workload", a.setup.workload.name},
                                        {"decode_efficiency", six_digits(a.setup.efficiency.decode)},
                                        {"sync_decode_efficiency", six_digits(a.setup.efficiency.sync_decode)},
                                        {"calibration", nlohmann::ordered_json::parse(fit_json)}};
  if (a.json) return write_output("-", sim::flexmarl::flexmarl_rows_json(*rows, extra.dump()));
  std::printf("# clustertwin sim flexmarl: workload %s (%zu agents, global batch %d, micro-batch %d) on %s\n",
              a.setup.workload.name.c_str(), a.setup.workload.agents.size(), a.global_batch, a.micro_batch,
              profile->name.c_str());
  std::printf("# decode efficiency %.3f of memory bandwidth (%s); sync's (MAS-RL's) engine %.3f%s\n",
              a.setup.efficiency.decode,
              measured_on.empty() ? "--decode-efficiency" : ("measured: device profile " + measured_on).c_str(),
              a.setup.efficiency.sync_decode,
              fit_json != "null" ? " (fitted: sync takes the paper's 914.4 s on MA)" : " (as the others)");
  std::fputs(sim::flexmarl::flexmarl_rows_table(*rows).c_str(), stdout);
  std::printf(
      "# speedup and util_x against sync; util: device-seconds of decode, prefill, training and optimizer "
      "work over devices x step time\n");
  if (!a.trace_dir.empty()) std::printf("# traces: %s/FRAMEWORK.json (https://ui.perfetto.dev)\n", a.trace_dir.c_str());
  return Status::ok();
}

// The workload (a paper's, or agents by size) and its batch settings.
void add_workload_options(CLI::App* cmd, FlexMarlArgs* a) {
  CLI::Option* paper_workload =
      cmd->add_option("--workload", a->workload,
                      "The paper's workload: ma (analysis, marketing, after-sales; 14B each) or ca (order, pricing "
                      "32B, inventory 14B; roles' sizes and response lengths reconstructed)")
          ->capture_default_str();
  cmd->add_option("--agents", a->agents,
                  "Agents by model size instead of a paper workload: 3x14B, 5x32B, 3x32B+7x14B (sizes 0.5B, 1.5B, 7B, "
                  "14B, 32B, 72B)")
      ->excludes(paper_workload);
  cmd->add_option("--global-batch", a->global_batch, "Samples per agent per step")->capture_default_str();
  cmd->add_option("--micro-batch", a->micro_batch, "Samples per training micro-batch")->capture_default_str();
  cmd->add_option("--group", a->group,
                  "GRPO samples per query (the paper's intra-query parallelism: a query's requests in flight)")
      ->capture_default_str();
  cmd->add_option("--inter-query", a->inter_query,
                  "Queries in flight under flexmarl and its ablations (the paper's inter-query parallelism; sync runs "
                  "one query at a time, marti the whole batch)")
      ->capture_default_str();
  cmd->add_option("--max-response", a->max_response, "Longest response, tokens")->capture_default_str();
}

}  // namespace

void add_sim_flexmarl_command(CLI::App& sim, Action* action) {
  auto a = std::make_shared<FlexMarlArgs>();
  CLI::App* cmd = sim.add_subcommand(
      "flexmarl",
      "FlexMARL's twin (arXiv 2602.09578): multi-agent LLM RL steps (rollout of every agent's responses, GRPO "
      "training, weight publish) under five frameworks, as an event-driven SimGrid model of rollout instances "
      "(continuous batching, KV-limited slots), trainer groups (state swapping) and transfers.\n\n"
      "Frameworks: sync (MAS-RL-like, colocated: agents answer one after another, each with its engine on every "
      "device, then train in turn on every device), marti (rollout and training pools apart, a barrier per turn and "
      "before training), flexmarl "
      "(per-sample turn dependencies, hierarchical load balancing, micro-batch asynchronous training with an "
      "on-policy optimizer step), flexmarl-nobalance, flexmarl-noasync (its ablations).\n\n"
      "On npu-768 (the paper's 48 x 16 NPUs) the decode efficiency is first fitted so that sync takes the paper's "
      "914.4 s per step on the MA workload (three 14B agents); everything else follows from the model. Rows: "
      "framework, step_s, tokens_per_s, utilization, speedup (against sync).");
  cmd->add_option("--framework", a->frameworks, "Frameworks, comma-separated, or all")->capture_default_str();
  add_workload_options(cmd, a.get());
  cmd->add_option("--platform", a->platform, "Shipped profile (npu-768, ...) or a YAML file")->capture_default_str();
  CLI::Option* workers = cmd->add_option("--workers", a->setup.devices,
                                         "Devices the run uses, one worker each (default: a node per agent)");
  CLI::Option* devices =
      cmd->add_option("--devices", a->setup.devices, "Deprecated: the old name of --workers")->excludes(workers);
  cmd->add_option("--calibration", a->calibration,
                  "paper: fit sync's (MAS-RL's) decode efficiency to the paper's sync step first; none: sync decodes "
                  "at --decode-efficiency like the others; auto: paper on npu-768")
      ->capture_default_str();
  CLI::Option* efficiency =
      cmd->add_option("--decode-efficiency", a->decode_efficiency,
                      "Share of memory bandwidth a decode iteration of flexmarl's and marti's engines reaches "
                      "(default: --device-profile's measured decode_bandwidth_share)");
  cmd->add_option("--device-profile", a->device_profile,
                  "Device profile (shipped name or YAML file) whose measured decode the engines run at")
      ->capture_default_str()
      ->excludes(efficiency);
  cmd->add_option("--load-gap", a->setup.gap_threshold, "Load-gap threshold that triggers rebalancing, requests")
      ->capture_default_str();
  cmd->add_option("--steps", a->setup.steps, "Steps simulated (the first is warm-up)")->capture_default_str();
  cmd->add_option("--seed", a->setup.seed, "Seed of the response lengths")->capture_default_str();
  cmd->add_option("--trace-dir", a->trace_dir, "Write each framework's last step as a Perfetto trace here");
  cmd->add_option("--csv", a->csv, "Also write the rows as CSV to this file (atomically)");
  cmd->add_flag("--json", a->json, "Print JSON: platform, workload, calibration and rows");
  cmd->callback([a, action, workers, devices, efficiency] {
    a->decode_efficiency_given = efficiency->count() > 0;
    a->workers_given = workers->count() > 0 || devices->count() > 0;
    if (devices->count() > 0 && a->setup.devices >= 1)
      std::fputs("clustertwin: sim flexmarl --devices is deprecated; use --workers\n", stderr);
    *action = [a] { return in_flexmarl_flag_words(run_sim_flexmarl(*a)); };
  });
}

}  // namespace clustertwin::cli
