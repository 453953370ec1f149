// clustertwin calibrate steps: the LLM twin's kernel efficiencies and
// per-layer overhead fitted to a table of measured steps
// (calibrators/llm/steps_fit.h), written as a profile `sim llm` reads.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <thread>

#include "calibrators/llm/steps_fit.h"
#include "cli/command.h"
#include "common/progress.h"
#include "common/text.h"
#include "models/cluster/cluster_profile_yaml.h"

namespace clustertwin::cli {
namespace {

struct StepsArgs {
  std::string table;
  std::string platform;
  std::string out;
  std::string name;
  std::string fit = "auto";
  std::string split;  // fit only the rows whose split column is this; "" for all
  bool json = false;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

StatusOr<std::vector<calibrators::llm::StepUnknown>> parse_unknowns(const std::string& text) {
  std::vector<calibrators::llm::StepUnknown> out;
  if (text == "auto") return out;
  for (const std::string& item : split_commas(text)) {
    bool known = false;
    for (auto u : {calibrators::llm::StepUnknown::kGemm, calibrators::llm::StepUnknown::kGemmFp8,
                   calibrators::llm::StepUnknown::kAttention, calibrators::llm::StepUnknown::kOverhead}) {
      if (calibrators::llm::step_unknown_name(u) == item) {
        out.push_back(u);
        known = true;
      }
    }
    if (!known)
      return Status::invalid_argument("--fit '" + item +
                                      "': unknown (allowed: auto, or of gemm, gemm_fp8, attention, overhead)");
  }
  return out;
}

Status run_calibrate_steps(const StepsArgs& a) {
  auto unknowns = parse_unknowns(a.fit);
  if (!unknowns.is_ok()) return unknowns.status();
  auto base = cluster::load_cluster_profile(a.platform);
  if (!base.is_ok()) return base.status().with_context("--platform");
  auto rows = calibrators::llm::read_steps_table(a.table, a.split);
  if (!rows.is_ok()) return rows.status();
  if (!a.json)
    std::fprintf(stderr, "fitting %zu rows of %s on %s\n", rows->size(), a.table.c_str(), base->name.c_str());
  calibrators::llm::StepsFitOptions options;
  options.unknowns = *unknowns;
  options.parallel = a.parallel;
  if (!a.json) {
    options.progress = [](int iteration, double rms) {
      show_progress(false, "iteration %d: rms relative error %.2f%%", iteration, 100 * rms);
    };
  }
  auto fit = calibrators::llm::fit_steps(*rows, *base, options);
  if (!fit.is_ok()) return fit.status();
  if (!a.name.empty()) fit->profile.name = a.name;
  const std::string header = fit->profile.name + ": profile " + base->name +
                             " with the LLM twin's kernel efficiencies fitted by `clustertwin calibrate steps " +
                             a.table + "` (" + std::to_string(rows->size()) +
                             " measured steps; costs llm/*: sim/llm/llm_twin.h). Refit rather than edit.\n";
  auto yaml = cluster::cluster_profile_yaml(fit->profile, header);
  if (!yaml.is_ok()) return yaml.status();
  CT_RETURN_IF_ERROR(write_output(a.out, *yaml));
  if (a.json) return write_output("-", calibrators::llm::steps_fit_json(*rows, *fit));
  std::fputs(calibrators::llm::steps_fit_report(*rows, *fit).c_str(), stdout);
  std::printf("# wrote %s (clustertwin sim llm --platform %s ...)\n", a.out.c_str(), a.out.c_str());
  return Status::ok();
}

}  // namespace

CLI::App* add_calibrate_steps(CLI::App* calibrate, Action* action) {
  auto a = std::make_shared<StepsArgs>();
  CLI::App* cmd = calibrate->add_subcommand(
      "steps",
      "Fit the LLM twin (sim llm) to a table of measured training steps and write the platform with the fitted "
      "values as a profile. Fits the GEMMs' share of peak (bf16/fp16, and fp8 where the table has fp8 rows), "
      "causal attention's share of peak and a per-layer overhead (as many as the rows allow: two rows an unknown); the "
      "network, the "
      "memory-bound kernels and the optimizer keep the profile's values. Prints each row's residual and its "
      "leave-one-out error.\n\nTABLE is CSV with a header: workers,tp,pp,dp,micro_batch,global_batch,hidden,heads,"
      "layers,seq,step_ms; optional vocab (51200), recompute (full), schedule (1f1b), virtual_stages, kv_heads, "
      "ffn, gated_mlp, precision (bf16), sequence_parallel, zero, grad_reduce (fp32), id; other columns ignored");
  cmd->add_option("TABLE", a->table, "The measured steps (CSV)")->required();
  cmd->add_option("--platform", a->platform, "The profile the steps ran on (shipped name or YAML file)")->required();
  cmd->add_option("-o,--out", a->out, "The fitted profile to write (YAML, atomically)")->required();
  cmd->add_option("--name", a->name, "Name of the written profile (default: the platform's)");
  cmd->add_option("--split", a->split,
                  "Fit only the rows whose split column is this (fit: the rows kept for fitting, the others held out)");
  cmd->add_option("--fit", a->fit, "auto, or unknowns to fit: gemm,gemm_fp8,attention,overhead")->capture_default_str();
  cmd->add_option("--parallel", a->parallel, "Simulations at a time (default: cores)")->check(CLI::Range(1, 256));
  cmd->add_flag("--json", a->json, "Print the fit as JSON instead of a table");
  cmd->callback([a, action] { *action = [a] { return run_calibrate_steps(*a); }; });
  return cmd;
}

}  // namespace clustertwin::cli
