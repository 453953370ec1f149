// clustertwin plan nestpipe: which NestPipe variant, with which micro-batch
// split, on how few workers reaches a samples/s target (cli/plan.h).

#include "cli/plan.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <map>
#include <memory>

#include "calibrators/nestpipe/nestpipe_paper_fit.h"
#include "cli/nestpipe/setup_flags.h"
#include "common/parallel.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/nestpipe/plans.h"
#include "sim/nestpipe/nestpipe_twin.h"

namespace clustertwin::cli {
namespace {

struct NestPipePlanArgs {
  PlanOptions plan;
  std::string variants = "torchrec,dbp,fwp,nestpipe,2dsp";
  std::string micro_batches = "4,8,16";
  std::string calibration = "auto";
  sim::nestpipe::NestPipeSetup setup;
  bool no_shortcut = false;
};

// The exact runs' steps (the confirm command passes them to sim nestpipe).
constexpr int kExactWarmup = 3, kExactDrain = 2, kExactMeasured = 2;

// One NestPipe configuration: a variant and, for those that split a batch into micro-batches, the split.
struct NestPipeConfig {
  models::nestpipe::Variant variant;
  int micro_batches = 0;  // 0: the variant does not split
  std::string name;
};

bool splits(models::nestpipe::Variant v) {
  return v == models::nestpipe::Variant::kFwp || v == models::nestpipe::Variant::kNestPipe;
}

StatusOr<std::vector<NestPipeConfig>> nestpipe_configs(const NestPipePlanArgs& a) {
  std::vector<int> counts;
  for (const std::string& item : split_commas(a.micro_batches)) {
    int m = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), m);
    if (ec != std::errc() || end != item.data() + item.size() || m < 1 || a.setup.batch_per_worker % m != 0) {
      return Status::invalid_argument("--micro-batches '" + item +
                                      "': must be a whole number that divides the batch (" +
                                      std::to_string(a.setup.batch_per_worker) + ")");
    }
    counts.push_back(m);
  }
  if (counts.empty()) return Status::invalid_argument("--micro-batches: give at least one count");
  std::vector<NestPipeConfig> out;
  for (const std::string& item : split_commas(a.variants)) {
    auto v = models::nestpipe::variant_from_name(item);
    if (!v) {
      return Status::invalid_argument("--variants '" + item +
                                      "': unknown variant (allowed: " + models::nestpipe::variant_list() + ")");
    }
    if (!splits(*v)) {
      out.push_back({*v, 0, item});
      continue;
    }
    for (int m : counts) {
      out.push_back({*v, m,
                     counts.size() == 1 ? item
                                        : item + ", " + std::to_string(m) + " micro-batches of " +
                                              std::to_string(a.setup.batch_per_worker / m)});
    }
  }
  if (out.empty()) return Status::invalid_argument("--variants: give at least one variant");
  return out;
}

std::string confirm_command(const NestPipePlanArgs& a, const NestPipeConfig& c, int workers) {
  std::string s = "clustertwin sim nestpipe --platform " + a.plan.platform + " --variant " +
                  std::string(models::nestpipe::variant_name(c.variant)) + " --workers " + std::to_string(workers);
  if (a.setup.model != sim::nestpipe::NestPipeSetup{}.model) s += " --model " + a.setup.model;
  if (a.setup.batch_per_worker != sim::nestpipe::NestPipeSetup{}.batch_per_worker)
    s += " --batch " + std::to_string(a.setup.batch_per_worker);
  if (c.micro_batches > 0) s += " --micro-batches " + std::to_string(c.micro_batches);
  if (a.calibration != "auto") s += " --calibration " + a.calibration;
  s += " --steps " + std::to_string(kExactWarmup + kExactDrain + kExactMeasured) + " --warmup " +
       std::to_string(kExactWarmup) + " --drain " + std::to_string(kExactDrain);
  return s;
}

// The estimates the search steers by: one measured step after the
// pipelines fill. The exact runs: two measured steps, the figures the
// answer's confirm command prints.
sim::SimOptions sim_options(const NestPipePlanArgs& a, bool exact) {
  sim::SimOptions o = sim::nestpipe::nestpipe_sim_options();
  o.collective_shortcut = !a.no_shortcut;
  o.warmup_steps = exact ? kExactWarmup : 2;
  o.drain_steps = exact ? kExactDrain : 2;
  o.steps = o.warmup_steps + o.drain_steps + (exact ? kExactMeasured : 1);
  return o;
}

// The twin at each (configuration, workers) point: one sweep per split (the
// key statistics depend on it), the sweeps side by side.
StatusOr<std::vector<sim::CapacityPoint>> evaluate_points(const NestPipePlanArgs& a,
                                                          const std::vector<NestPipeConfig>& configs,
                                                          const cluster::ClusterProfile& profile,
                                                          const std::vector<std::pair<int, int>>& points, bool exact) {
  std::map<int, std::vector<size_t>> by_split;
  for (size_t k = 0; k < points.size(); ++k) {
    const NestPipeConfig& c = configs[points[k].first];
    by_split[c.micro_batches > 0 ? c.micro_batches : a.setup.micro_batches].push_back(k);
  }
  std::vector<std::pair<int, std::vector<size_t>>> groups(by_split.begin(), by_split.end());
  std::vector<sim::CapacityPoint> out(points.size());
  std::vector<Status> failed(groups.size(), Status::ok());
  const int threads = std::max(1, std::min<int>(a.plan.parallel, static_cast<int>(groups.size())));
  parallel_for(groups.size(), threads, [&](size_t g) {
    const auto& [micro_batches, indices] = groups[g];
    sim::nestpipe::NestPipeSetup setup = a.setup;
    setup.micro_batches = micro_batches;
    sim::nestpipe::NestPipeSweep sweep;
    sweep.parallel = std::max(1, a.plan.parallel / threads);
    sweep.options = sim_options(a, exact);
    for (size_t k : indices)
      sweep.points.push_back({configs[points[k].first].variant, points[k].second});
    auto rows = sim::nestpipe::run_nestpipe_sweep(setup, profile, sweep);
    if (!rows.is_ok()) {
      failed[g] = rows.status();
      return;
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      out[indices[i]].step_s = (*rows)[i].step_ms / 1e3;
      out[indices[i]].throughput = (*rows)[i].qps;
    }
  });
  for (const Status& st : failed)
    CT_RETURN_IF_ERROR(st);
  return out;
}

Status run_plan_nestpipe(NestPipePlanArgs a) {
  const auto started = std::chrono::steady_clock::now();
  // Everything the user typed is checked before the (slow) calibration.
  CT_RETURN_IF_ERROR(check_plan_target(a.plan));
  CT_RETURN_IF_ERROR(sim::nestpipe::validate(a.setup));
  auto configs = nestpipe_configs(a);
  if (!configs.is_ok()) return configs.status();
  auto plain = cluster::load_cluster_profile(a.plan.platform);
  if (!plain.is_ok()) return plain.status();
  CT_RETURN_IF_ERROR(check_plan_options(&a.plan, plain->devices(), plain->name));
  calibrators::BaselineFit fit;
  std::string fit_json;
  if (a.calibration != "none") std::fprintf(stderr, "plan nestpipe: preparing %s...\n", plain->name.c_str());
  auto profile = calibrators::nestpipe_profile(a.plan.platform, a.calibration, a.setup, &fit_json, &fit);
  if (!profile.is_ok()) return profile.status();
  if (a.calibration != "none") {
    std::fprintf(stderr, "plan nestpipe: %s ready, %.0f s\n", profile->name.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }

  PlanSystem s;
  s.system = "nestpipe";
  s.platform = profile->name;
  s.title = a.setup.model + ", batch " + std::to_string(a.setup.batch_per_worker) + " per worker, on " + profile->name +
            (fit_json.empty() ? "" : " (TorchRec baseline calibrated to the paper)");
  s.estimate = "one measured step";
  for (const NestPipeConfig& c : *configs)
    s.families.push_back(c.name);
  s.ladder = sim::node_ladder(profile->devices_per_node, a.plan.max_workers);
  s.facts = {{"model", a.setup.model}, {"batch_per_worker", a.setup.batch_per_worker}};
  s.describe = [&](int family, nlohmann::ordered_json& j) {
    const NestPipeConfig& c = (*configs)[family];
    j["variant"] = std::string(models::nestpipe::variant_name(c.variant));
    j["micro_batches"] = c.micro_batches > 0 ? c.micro_batches : a.setup.micro_batches;
  };
  s.confirm = [&](int family, int workers) { return confirm_command(a, (*configs)[family], workers); };
  s.evaluate = [&](const std::vector<std::pair<int, int>>& points, bool exact) {
    return evaluate_points(a, *configs, *profile, points, exact);
  };
  return run_plan(a.plan, s, started);
}

}  // namespace

void add_plan_nestpipe(CLI::App* plan, Action* action) {
  auto a = std::make_shared<NestPipePlanArgs>();
  a->plan.platform = "npu-1536";
  CLI::App* np = plan->add_subcommand(
      "nestpipe",
      "NestPipe: which variant (torchrec, dbp, fwp, nestpipe, 2dsp), with which micro-batch split, on how few "
      "workers reaches the target samples/s. The twin of 'clustertwin sim nestpipe' (on npu-1536 the TorchRec "
      "baseline is calibrated to the paper first); the search steers by one-measured-step estimates, and the "
      "answer is run with two measured steps, which its confirm command repeats.");
  add_plan_options(np, &a->plan, "Samples per second the whole cluster must reach (e.g. 4e5)",
                   "Shipped profile (npu-1536, gpu-128, ...) or a YAML file");
  np->add_option("--variants", a->variants, "Variants to consider, comma-separated (semisync, stale, is left out)")
      ->capture_default_str();
  np->add_option("--micro-batches", a->micro_batches, "Micro-batch splits tried for fwp and nestpipe")
      ->capture_default_str();
  np->add_option("--calibration", a->calibration, "As sim nestpipe: auto, paper or none")->capture_default_str();
  np->add_option("--model", a->setup.model, "Model spec: hstu-industrial, fuxi-kuairand, dlrm-criteo, ...")
      ->capture_default_str();
  np->add_option("--batch", a->setup.batch_per_worker, "Samples per worker per step")->capture_default_str();
  np->add_flag("--no-collective-shortcut", a->no_shortcut,
               "Move every collective over the network as flows, as sim nestpipe's flag (for comparison; the same "
               "answer, slower)");
  np->callback([a, action] { *action = [a] { return in_nestpipe_flag_words(run_plan_nestpipe(*a)); }; });
}

}  // namespace clustertwin::cli
