// clustertwin sim mix: several jobs on one cluster, in one simulation.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "common/gnuplot.h"
#include "models/cluster/cluster_profile.h"
#include "sim/mix/mix_plot.h"
#include "sim/mix/mix_run.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::cli {
namespace {

struct MixArgs {
  std::string file;
  std::string placement;
  int64_t seed = -1;
  bool json = false;
  std::string trace_dir;
  std::string plot;
  int top_links = 5;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

Status run_mix(const MixArgs& a) {
  auto mix = sim::mix::read_mix(a.file);
  if (!mix.is_ok()) return mix.status();
  auto profile = cluster::load_cluster_profile(mix->profile);
  if (!profile.is_ok()) return profile.status().with_context(a.file + ": field 'profile'");
  CT_RETURN_IF_ERROR(sim::mix::check_mix(*mix, *profile));
  sim::mix::MixOptions o;
  o.placement = a.placement;
  if (a.seed >= 0) {
    o.seed = static_cast<uint64_t>(a.seed);
    o.seed_given = true;
  }
  o.parallel = a.parallel;
  o.top_links = a.top_links;
  if (!a.trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.trace_dir, ec);
    if (ec) return Status::io_error("--trace-dir " + a.trace_dir + ": " + ec.message());
    o.trace_dir = a.trace_dir;
  }
  if (!a.plot.empty() && !gnuplot_installed()) {
    return Status::invalid_argument("--plot " + a.plot +
                                    ": gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)");
  }
  auto result = sim::mix::run_mix(*mix, *profile, o);
  if (!result.is_ok()) return result.status();
  if (!a.plot.empty()) {
    // Every placement policy, the one asked for among them (its run is the one reported).
    std::vector<sim::mix::MixResult> by_placement;
    for (const char* placement : {"packed", "spread", "random"}) {
      if (placement == result->placement) {
        by_placement.push_back(*result);
        continue;
      }
      sim::mix::MixOptions other = o;
      other.placement = placement;
      other.trace_dir.clear();
      auto r = sim::mix::run_mix(*mix, *profile, other);
      if (!r.is_ok()) return r.status();
      by_placement.push_back(std::move(r).value());
    }
    CT_RETURN_IF_ERROR(draw_png_with_gnuplot(
        a.plot, [&](const std::string& output) { return sim::mix::mix_plot_script(by_placement, *result, output); }));
  }
  if (a.json) return write_output("-", sim::mix::mix_result_json(*result));
  std::printf("%s", sim::mix::mix_result_table(*result).c_str());
  if (!a.plot.empty())
    std::printf("# plot: %s (slowdown per placement; goodput per checkpoint interval)\n", a.plot.c_str());
  if (!a.trace_dir.empty()) {
    std::printf("# traces: %s/JOB.json (in the mix) and JOB-alone.json (open in https://ui.perfetto.dev)\n",
                a.trace_dir.c_str());
  }
  return Status::ok();
}

}  // namespace

void add_sim_mix_command(CLI::App& sim, Action* action) {
  auto a = std::make_shared<MixArgs>();
  CLI::App* cmd = sim.add_subcommand(
      "mix",
      "Run several jobs on one cluster in one simulation (a job mix file, docs/mix.md): each job on its own nodes, "
      "all flows sharing the fabric's links; per job its step time alone (same nodes, no other job) and in the mix, "
      "the slowdown, and the busiest links that carried several jobs' traffic");
  cmd->add_option("MIX", a->file, "Job mix file (YAML)")->required();
  cmd->add_option("--placement", a->placement,
                  "packed (fill nodes and pods in order), spread (round-robin across pods) or random (seeded); "
                  "default: the mix file's placement (packed). Jobs with explicit nodes keep them");
  cmd->add_option("--seed", a->seed, "Seed of the random placement (default: the mix file's seed, else 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 31));
  cmd->add_flag("--json", a->json, "Print JSON instead of the table");
  cmd->add_option("--trace-dir", a->trace_dir, "Write each job's simulated trace here: JOB.json and JOB-alone.json");
  cmd->add_option("--plot", a->plot,
                  "Also run the mix under packed, spread and random placement and draw each job's slowdown per "
                  "placement, and (with failures) goodput against the checkpoint interval, into this PNG");
  cmd->add_option("--top-links", a->top_links, "Contended links to list")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--parallel", a->parallel,
                  "Simulations at a time (the mix and each job alone), each in its own process (default: cores)")
      ->check(CLI::Range(1, 256));
  cmd->callback([a, action] { *action = [a] { return in_flag_words(run_mix(*a), {{"placement", "--placement"}}); }; });
}

}  // namespace clustertwin::cli
