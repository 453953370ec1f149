// clustertwin sim nestpipe: NestPipe's twin from the command line.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "calibrators/nestpipe/nestpipe_paper_fit.h"
#include "cli/command.h"
#include "cli/nestpipe/setup_flags.h"
#include "common/json.h"
#include "common/progress.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/nestpipe/plans.h"
#include "sim/core/plan_price.h"
#include "sim/nestpipe/nestpipe_twin.h"

namespace clustertwin::cli {
namespace {

struct NestPipeArgs {
  std::string workers = "128,256,512,1024,1536";
  std::string variants = "torchrec,semisync,dbp,fwp,nestpipe,2dsp";
  std::string platform = "npu-1536";
  std::string calibration = "auto";
  sim::nestpipe::NestPipeSetup setup;
  bool no_clustering = false;
  double launch_us = sim::nestpipe::NestPipeSetup{}.launch_latency_s * 1e6;
  int steps = 12;
  int warmup = 4;
  int drain = 3;
  bool full = false;
  bool no_shortcut = false;
  std::string trace_dir;
  std::string csv;
  bool json = false;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

StatusOr<std::vector<models::nestpipe::Variant>> parse_variants(const std::string& text) {
  std::vector<models::nestpipe::Variant> out;
  for (const std::string& item : split_commas(text)) {
    auto v = models::nestpipe::variant_from_name(item);
    if (!v) {
      return Status::invalid_argument("--variant '" + item +
                                      "': unknown variant (allowed: " + models::nestpipe::variant_list() + ")");
    }
    out.push_back(*v);
  }
  return out;
}

// The JSON's settings before its rows: the platform, the model and the baseline's fit (null when none).
std::string nestpipe_json_settings(const cluster::ClusterProfile& profile, const NestPipeArgs& a,
                                   const std::string& fit_json) {
  const auto fit = fit_json.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json::parse(fit_json);
  return nlohmann::ordered_json{{"platform", profile.name}, {"model", a.setup.model}, {"calibration", fit}}.dump();
}

Status run_sim_nestpipe(NestPipeArgs a) {
  a.setup.clustering = !a.no_clustering;
  if (!(a.launch_us >= 0 && a.launch_us <= 1e6))
    return Status::invalid_argument("--launch-us " + format_number("%g", a.launch_us) + ": must be in [0, 1e6]");
  a.setup.launch_latency_s = a.launch_us * 1e-6;
  CT_RETURN_IF_ERROR(sim::nestpipe::validate(a.setup));
  auto workers = parse_workers(a.workers);
  if (!workers.is_ok()) return workers.status();
  auto variants = parse_variants(a.variants);
  if (!variants.is_ok()) return variants.status();
  sim::SimOptions counts;
  counts.steps = a.steps;
  counts.warmup_steps = a.warmup;
  counts.drain_steps = a.drain;
  CT_RETURN_IF_ERROR(sim::check_steps(counts));  // before the calibration's seconds
  calibrators::BaselineFit fit;
  std::string fit_json;
  auto profile = calibrators::nestpipe_profile(a.platform, a.calibration, a.setup, &fit_json, &fit);
  if (!profile.is_ok()) return profile.status();

  sim::nestpipe::NestPipeSweep sweep;
  sweep.variants = *variants;
  sweep.workers = *workers;
  sweep.parallel = a.parallel;
  sweep.options = sim::nestpipe::nestpipe_sim_options();
  sweep.options.steps = a.steps;
  sweep.options.warmup_steps = a.warmup;
  sweep.options.drain_steps = a.drain;
  sweep.options.symmetric = !a.full;
  sweep.options.collective_shortcut = !a.no_shortcut;
  if (!a.trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.trace_dir, ec);
    if (ec) return Status::io_error("--trace-dir " + a.trace_dir + ": " + ec.message());
    sweep.trace_dir = a.trace_dir;
  }
  sweep.progress = [](const sim::nestpipe::NestPipeRow& r, int done, int total) {
    show_progress(done == total, "[%d/%d] %s at %d workers: %.1f ms (%.1f s)", done, total, r.variant.c_str(),
                  r.workers, r.step_ms, r.wall_s);
  };
  auto rows = sim::nestpipe::run_nestpipe_sweep(a.setup, *profile, sweep);
  if (!rows.is_ok()) return rows.status();
  if (!a.csv.empty()) CT_RETURN_IF_ERROR(write_output(a.csv, sim::nestpipe::nestpipe_rows_csv(*rows)));

  if (a.json)
    return write_output("-", sim::nestpipe::nestpipe_rows_json(*rows, nestpipe_json_settings(*profile, a, fit_json)));
  std::printf("# clustertwin sim nestpipe: %s on %s, batch %d per worker, %d micro-batches%s\n", a.setup.model.c_str(),
              profile->name.c_str(), a.setup.batch_per_worker, a.setup.micro_batches,
              a.setup.clustering ? "" : ", no clustering");
  if (!fit_json.empty()) {
    std::printf(
        "# baseline calibrated to the paper's TorchRec (%d rounds, largest miss %.2f%%): dense %.1f TFLOP/s, "
        "lookup %.1f GB/s + %.3f ms per requester, All2All efficiency %.3f, congestion at %.0f peers\n",
        fit.iterations, 100 * fit.max_error, fit.dense_flop_rate / 1e12, fit.lookup_byte_rate / 1e9,
        fit.lookup_per_request_s * 1e3, fit.a2a_efficiency, fit.a2a_congestion_peers);
  }
  std::fputs(sim::nestpipe::nestpipe_rows_table(*rows).c_str(), stdout);
  std::printf(
      "# lookup and exp. a2a: exposed on the critical path; a2a: total All2All time; speedup against "
      "torchrec at the same workers; scaling: per-worker throughput against the fewest workers\n");
  if (!a.trace_dir.empty())
    std::printf("# traces: %s/VARIANT-WORKERS.json (open in https://ui.perfetto.dev)\n", a.trace_dir.c_str());
  return Status::ok();
}

}  // namespace

void add_sim_nestpipe_command(CLI::App& sim, Action* action) {
  auto a = std::make_shared<NestPipeArgs>();
  CLI::App* cmd = sim.add_subcommand(
      "nestpipe",
      "NestPipe's twin (arXiv 2604.06956): the step plans of TorchRec and the pipelined variants at any worker "
      "count, sized from the key statistics of Zipf data, on a cluster profile. Reports step time, throughput, "
      "exposed lookup, All2All (total and exposed), speedup over torchrec and scaling efficiency.\n\n"
      "Variants: torchrec (TorchRec's sparse-dist pipeline), semisync (embeddings one step stale: the negative "
      "control), dbp (dual-buffer pipelining), fwp (frozen-window micro-batch pipelining), nestpipe (dbp + fwp + "
      "key-centric clustering), 2dsp (2D sparse parallelism over groups of --sharding-group workers, the rows "
      "its replicas changed averaged across groups every --sync-every steps; twin only: the real executor does not "
      "run it).\n\n"
      "On npu-1536 the TorchRec baseline is first calibrated to the paper's figures (step 5,793.83 ms at 1,536; "
      "lookup share 24.4% -> 49.6%, All2All 9.2% -> 20.5% from 128 to 1,536); the pipelined variants then follow "
      "from their plans.");
  cmd->add_option("--workers", a->workers, "Worker counts: 128,256,512,1024,1536")->capture_default_str();
  cmd->add_option("--variant", a->variants, "Variants, comma-separated")->capture_default_str();
  cmd->add_option("--platform", a->platform, "Shipped profile (npu-1536, gpu-128, ...) or a YAML file")
      ->capture_default_str();
  cmd->add_option("--calibration", a->calibration,
                  "paper: fit the TorchRec baseline to the paper's figures first (on a cluster of fewer than 1,536 "
                  "devices: the lookup and All2All shares at 128 only); none: the profile as it is; auto: paper on "
                  "npu-1536 and gpu-128, none elsewhere")
      ->capture_default_str();
  cmd->add_option("--model", a->setup.model, "Model spec: hstu-industrial, fuxi-kuairand, dlrm-criteo, ...")
      ->capture_default_str();
  cmd->add_option("--batch", a->setup.batch_per_worker, "Samples per worker per step")->capture_default_str();
  cmd->add_option("--micro-batches", a->setup.micro_batches, "FWP's micro-batches per batch (must divide --batch)")
      ->capture_default_str();
  cmd->add_option("--zipf", a->setup.zipf_exponent, "Zipf exponent of key popularity")->capture_default_str();
  cmd->add_option("--overlap", a->setup.batch_overlap, "Share of a batch's key slots repeated from the previous one")
      ->capture_default_str();
  cmd->add_option("--samples-per-user", a->setup.samples_per_user,
                  "Samples of one user in a batch, interleaved with other users' (1: i.i.d. samples; 0: the model's "
                  "default, 8 for hstu-industrial, else 1)")
      ->capture_default_str();
  cmd->add_option("--user-shared", a->setup.user_shared_fraction,
                  "Share of a sample's keys its user's other samples also hold (the history)")
      ->capture_default_str();
  cmd->add_option("--sharding-group", a->setup.sharding_group, "2dsp's group size G")->capture_default_str();
  cmd->add_option("--sync-every", a->setup.replica_sync_every,
                  "2dsp: steps between replica syncs (the rows changed since are averaged across groups)")
      ->capture_default_str();
  cmd->add_option("--launch-us", a->launch_us,
                  "Microseconds per kernel launch: the dense call's fixed cost, paid per micro-batch, is the spec's "
                  "dense layers x 40 kernels x this (calibrated profiles)")
      ->capture_default_str();
  cmd->add_flag("--exact-skew", a->setup.exact_skew,
                "Send each owner its own share in the All2Alls (default: every peer the busiest owner's share; "
                "exact is slower to simulate at scale)");
  cmd->add_flag("--no-clustering", a->no_clustering, "nestpipe without key-centric clustering");
  cmd->add_option("--steps", a->steps, "Steps simulated")->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Steps before the measured window")->capture_default_str();
  cmd->add_option("--drain", a->drain, "Steps after it")->capture_default_str();
  cmd->add_flag("--full", a->full, "Simulate every worker (default: one per node when they provably agree)");
  cmd->add_flag("--no-collective-shortcut", a->no_shortcut,
                "Move every collective over the network as flows (default: where one collective at a time has the "
                "fabric, each distinct one is simulated once and its repeats take its time; the same results within "
                "1e-9 relative)");
  cmd->add_option("--trace-dir", a->trace_dir, "Write a Perfetto trace per point here: VARIANT-WORKERS.json");
  cmd->add_option("--csv", a->csv, "Also write the rows as CSV to this file (atomically)");
  cmd->add_flag("--json", a->json, "Print JSON: platform, model, calibration and rows");
  cmd->add_option("--parallel", a->parallel, "Simulations run at once (default: cores)")->check(CLI::Range(1, 256));
  cmd->callback(
      [a, action] { *action = [a] { return in_sim_option_words(in_nestpipe_flag_words(run_sim_nestpipe(*a))); }; });
}

}  // namespace clustertwin::cli
