// clustertwin plan flowtrain: which FlowTrain mode, with which encoder /
// backbone split, on how few workers reaches a samples/s target (cli/plan.h).
// The split is the heterogeneous allocator's at each count, as in sim
// flowtrain; a count is in a mode's ladder when a layout fits the devices'
// memory there.

#include "cli/plan.h"

#include <CLI/CLI.hpp>
#include <map>
#include <memory>

#include "cli/flowtrain/setup_flags.h"
#include "common/parallel.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/units.h"
#include "sim/flowtrain/flowtrain_twin.h"

namespace clustertwin::cli {
namespace {

struct FlowTrainPlanArgs {
  PlanOptions plan;
  std::string modes = "all";
  std::string pool = "8GB";
  sim::flowtrain::FlowTrainSetup setup;
};

std::string layout_of(const sim::flowtrain::FlowTrainRow& r) {
  std::string s = "TP" + std::to_string(r.backbone_tp) + " PP" + std::to_string(r.backbone_pp);
  if (r.encoder_workers == 0) return s;
  return std::to_string(r.encoder_workers) + " encoder TP" + std::to_string(r.encoder_tp) + ", " +
         std::to_string(r.workers - r.encoder_workers) + " backbone " + s;
}

// Where each mode fits: the allocator's closed form at every count (the
// split modes share one allocation), computed once, side by side.
// (monolithic, workers) -> a layout fits.
std::map<std::pair<bool, int>, bool> fits_by_count(const FlowTrainPlanArgs& a, const cluster::ClusterProfile& profile,
                                                   const std::vector<int>& ladder) {
  std::map<std::pair<bool, int>, bool> fit;
  std::vector<std::pair<bool, int>> keys;
  for (int w : ladder) {
    for (bool mono : {true, false})
      keys.push_back({mono, w});
  }
  std::vector<char> ok(keys.size(), 0);
  parallel_for(keys.size(), a.plan.parallel, [&](size_t k) {
    sim::flowtrain::FlowTrainSetup setup = a.setup;
    setup.workers = keys[k].second;
    const auto mode =
        keys[k].first ? sim::flowtrain::FlowTrainMode::kMonolithic : sim::flowtrain::FlowTrainMode::kFlowTrain;
    ok[k] = setup.workers >= 2 && sim::flowtrain::flowtrain_fits(setup, profile, mode).is_ok();
  });
  for (size_t k = 0; k < keys.size(); ++k)
    fit[keys[k]] = ok[k] != 0;
  return fit;
}

// The sim flowtrain command that runs the answer again, its flags where they differ from the defaults.
std::string confirm_command(const FlowTrainPlanArgs& a, const std::string& mode, int workers) {
  std::string c = "clustertwin sim flowtrain --platform " + a.plan.platform + " --mode " + mode + " --workers " +
                  std::to_string(workers);
  if (a.setup.model != sim::flowtrain::FlowTrainSetup{}.model) c += " --model " + a.setup.model;
  if (a.setup.global_batch != sim::flowtrain::FlowTrainSetup{}.global_batch)
    c += " --global-batch " + std::to_string(a.setup.global_batch);
  if (a.setup.micro_batch_tokens != sim::flowtrain::FlowTrainSetup{}.micro_batch_tokens)
    c += " --micro-batch-tokens " + std::to_string(a.setup.micro_batch_tokens);
  if (a.pool != FlowTrainPlanArgs{}.pool) c += " --pool-memory " + a.pool;
  if (a.setup.steps != sim::flowtrain::FlowTrainSetup{}.steps) c += " --steps " + std::to_string(a.setup.steps);
  return c;
}

// The twin at each (mode, workers) point, side by side; estimates run kPlanEstimateSteps steps.
StatusOr<std::vector<sim::CapacityPoint>> evaluate_points(const FlowTrainPlanArgs& a,
                                                          const cluster::ClusterProfile& profile,
                                                          const std::vector<sim::flowtrain::FlowTrainMode>& modes,
                                                          const std::vector<std::string>& names,
                                                          const std::vector<std::pair<int, int>>& points, bool exact) {
  std::vector<StatusOr<sim::flowtrain::FlowTrainRow>> rows(points.size(), Status::internal("not run"));
  parallel_for(points.size(), a.plan.parallel, [&](size_t k) {
    sim::flowtrain::FlowTrainSetup setup = a.setup;
    setup.workers = points[k].second;
    if (!exact) setup.steps = kPlanEstimateSteps;
    rows[k] = sim::flowtrain::run_flowtrain(setup, profile, modes[points[k].first]);
  });
  std::vector<sim::CapacityPoint> out(points.size());
  for (size_t k = 0; k < points.size(); ++k) {
    if (!rows[k].is_ok()) {
      return rows[k].status().with_context(names[points[k].first] + " at " + std::to_string(points[k].second) +
                                           " workers");
    }
    out[k].step_s = rows[k]->step_s;
    out[k].throughput = rows[k]->samples_per_s;
    out[k].detail = layout_of(*rows[k]);
  }
  return out;
}

Status run_plan_flowtrain(FlowTrainPlanArgs a) {
  const auto started = std::chrono::steady_clock::now();
  CT_RETURN_IF_ERROR(check_plan_target(a.plan));
  auto modes = sim::flowtrain::parse_flowtrain_modes(a.modes);
  if (!modes.is_ok()) return modes.status();
  auto pool = cluster::parse_quantity(a.pool, cluster::Quantity::kSize);
  if (!pool.is_ok()) return Status::invalid_argument("--pool-memory '" + a.pool + "': " + pool.status().message());
  a.setup.pool_bytes = *pool;
  auto profile = cluster::load_cluster_profile(a.plan.platform);
  if (!profile.is_ok()) return profile.status();
  CT_RETURN_IF_ERROR(check_plan_options(&a.plan, profile->devices(), profile->name));
  {
    sim::flowtrain::FlowTrainSetup s = a.setup;
    s.workers = std::max(2, std::min(a.plan.max_workers, profile->devices()));
    CT_RETURN_IF_ERROR(sim::flowtrain::validate(s, *profile));
  }

  PlanSystem s;
  s.system = "flowtrain";
  s.platform = profile->name;
  s.title = a.setup.model + ", " + with_thousands(a.setup.global_batch) + " samples a step, micro-batches of " +
            with_thousands(static_cast<double>(a.setup.micro_batch_tokens)) + " tokens, on " + profile->name;
  s.estimate = "one measured step";
  s.step_in_ms = false;
  s.detail_name = "split and layouts";
  for (sim::flowtrain::FlowTrainMode m : *modes)
    s.families.push_back(sim::flowtrain::flowtrain_mode_name(m));
  s.ladder = sim::node_ladder(profile->devices_per_node, a.plan.max_workers);
  s.facts = {{"model", a.setup.model},
             {"global_batch", a.setup.global_batch},
             {"micro_batch_tokens", a.setup.micro_batch_tokens}};
  s.describe = [&](int family, nlohmann::ordered_json& j) { j["mode"] = s.families[family]; };

  const std::map<std::pair<bool, int>, bool> fit = fits_by_count(a, *profile, s.ladder);
  s.fits = [&](int family, int workers) {
    return fit.at({(*modes)[family] == sim::flowtrain::FlowTrainMode::kMonolithic, workers});
  };
  s.confirm = [&](int family, int workers) { return confirm_command(a, s.families[family], workers); };
  s.evaluate = [&](const std::vector<std::pair<int, int>>& points, bool exact) {
    return evaluate_points(a, *profile, *modes, s.families, points, exact);
  };
  return run_plan(a.plan, s, started);
}

}  // namespace

void add_plan_flowtrain(CLI::App* plan, Action* action) {
  auto a = std::make_shared<FlowTrainPlanArgs>();
  a->plan.platform = "h100-1024";
  CLI::App* cmd = plan->add_subcommand(
      "flowtrain",
      "FlowTrain: which mode (monolithic, disagg-sync, flowtrain), with the allocator's encoder/backbone split and "
      "layouts, on how few workers reaches the target samples/s at a fixed global batch. The twin of "
      "'clustertwin sim flowtrain'; counts where no layout fits the devices' memory are skipped; the search "
      "steers by one-measured-step estimates and the answer is run with sim flowtrain's steps, which its confirm "
      "command repeats.");
  add_plan_options(cmd, &a->plan, "Samples per second the whole cluster must reach (e.g. 400)",
                   "Shipped profile (h100-1024, ...) or a YAML file");
  cmd->add_option("--mode", a->modes, "Modes to consider, comma-separated (monolithic, disagg-sync, flowtrain), or all")
      ->capture_default_str();
  cmd->add_option("--model", a->setup.model, "ENCODER+BACKBONE: 6B+72B or 300M+7B")->capture_default_str();
  cmd->add_option("--global-batch", a->setup.global_batch, "Samples per step")->capture_default_str();
  cmd->add_option("--micro-batch-tokens", a->setup.micro_batch_tokens, "Backbone tokens per packed micro-batch")
      ->capture_default_str();
  cmd->add_option("--pool-memory", a->pool, "Memory-pool room per encoder worker")->capture_default_str();
  cmd->add_option("--steps", a->setup.steps, "Steps of the exact runs (the first is warm-up)")->capture_default_str();
  cmd->callback([a, action] { *action = [a] { return in_flowtrain_flag_words(run_plan_flowtrain(*a)); }; });
}

}  // namespace clustertwin::cli
