// clustertwin plan flexmarl: which multi-agent RL framework reaches a
// generated-tokens-per-second target on the fewest devices (cli/plan.h).
// Each framework's placement at a device count is its own (models/flexmarl/
// frameworks.h); a count is in a framework's ladder when the placement holds
// every agent there.

#include "cli/plan.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "calibrators/flexmarl/flexmarl_paper_fit.h"
#include "cli/flexmarl/setup_flags.h"
#include "common/parallel.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/flexmarl/agents.h"
#include "models/flexmarl/frameworks.h"
#include "sim/flexmarl/flexmarl_twin.h"

namespace clustertwin::cli {
namespace {

struct FlexMarlPlanArgs {
  PlanOptions plan;
  std::string frameworks = "sync,marti,flexmarl";
  std::string agents;  // "" for the paper's MA workload
  std::string calibration = "auto";
  int global_batch = 64;
  std::string device_profile = sim::flexmarl::kDefaultDeviceProfile;
  sim::flexmarl::FlexMarlSetup setup;
};

std::string placement_of(const models::flexmarl::Deployment& d) {
  if (d.trainer_groups == 0) return "colocated";
  return std::to_string(d.rollout_devices) + " rollout, " + std::to_string(d.devices - d.rollout_devices) + " training";
}

// The sim flexmarl command that runs the answer again, its flags where they differ from the defaults.
std::string confirm_command(const FlexMarlPlanArgs& a, const std::string& framework, int devices) {
  std::string c = "clustertwin sim flexmarl --platform " + a.plan.platform + " --framework " + framework +
                  " --workers " + std::to_string(devices);
  if (!a.agents.empty()) c += " --agents " + a.agents;
  if (a.global_batch != FlexMarlPlanArgs{}.global_batch) c += " --global-batch " + std::to_string(a.global_batch);
  if (a.calibration != "auto") c += " --calibration " + a.calibration;
  if (a.device_profile != sim::flexmarl::kDefaultDeviceProfile) c += " --device-profile " + a.device_profile;
  if (a.setup.steps != sim::flexmarl::FlexMarlSetup{}.steps) c += " --steps " + std::to_string(a.setup.steps);
  return c;
}

// The twin at each (framework, devices) point, side by side, with the
// placement it deploys; estimates run kPlanEstimateSteps steps.
StatusOr<std::vector<sim::CapacityPoint>> evaluate_points(const FlexMarlPlanArgs& a,
                                                          const cluster::ClusterProfile& profile,
                                                          const std::vector<models::flexmarl::Framework>& frameworks,
                                                          const models::flexmarl::DeviceFacts& facts,
                                                          const std::vector<std::string>& names,
                                                          const std::vector<std::pair<int, int>>& points, bool exact) {
  std::vector<StatusOr<sim::flexmarl::FlexMarlRow>> rows(points.size(), Status::internal("not run"));
  parallel_for(points.size(), a.plan.parallel, [&](size_t k) {
    sim::flexmarl::FlexMarlSetup setup = a.setup;
    setup.devices = points[k].second;
    if (!exact) setup.steps = kPlanEstimateSteps;
    rows[k] = sim::flexmarl::run_flexmarl(setup, profile, frameworks[points[k].first]);
  });
  std::vector<sim::CapacityPoint> out(points.size());
  for (size_t k = 0; k < points.size(); ++k) {
    if (!rows[k].is_ok()) {
      return rows[k].status().with_context(names[points[k].first] + " on " + std::to_string(points[k].second) +
                                           " devices");
    }
    out[k].step_s = rows[k]->step_s;
    out[k].throughput = rows[k]->tokens_per_s;
    auto d = models::flexmarl::deploy(a.setup.workload, frameworks[points[k].first], points[k].second, facts,
                                      a.setup.efficiency);
    if (d.is_ok()) out[k].detail = placement_of(*d);
  }
  return out;
}

Status run_plan_flexmarl(FlexMarlPlanArgs a) {
  const auto started = std::chrono::steady_clock::now();
  CT_RETURN_IF_ERROR(check_plan_target(a.plan));
  auto frameworks = models::flexmarl::parse_frameworks(a.frameworks);
  if (!frameworks.is_ok()) return frameworks.status();
  auto workload = models::flexmarl::workload_from_agents(a.agents);
  if (!workload.is_ok()) return Status::invalid_argument("--agents " + workload.status().message());
  a.setup.workload = std::move(*workload);
  a.setup.workload.global_batch = a.global_batch;
  auto measured = sim::flexmarl::engine_decode_efficiency(a.device_profile);
  if (!measured.is_ok()) return measured.status();
  a.setup.efficiency.decode = *measured;
  auto profile = cluster::load_cluster_profile(a.plan.platform);
  if (!profile.is_ok()) return profile.status();
  CT_RETURN_IF_ERROR(check_plan_options(&a.plan, profile->devices(), profile->name));
  CT_RETURN_IF_ERROR(sim::flexmarl::validate(a.setup, *profile));
  std::string fit_json;
  auto efficiency = calibrators::flexmarl_sync_decode_efficiency(a.setup, *profile, a.calibration, &fit_json);
  if (!efficiency.is_ok()) return efficiency.status();
  a.setup.efficiency.sync_decode = *efficiency;

  PlanSystem s;
  s.system = "flexmarl";
  s.platform = profile->name;
  s.unit = "tokens/s";
  s.unit_key = "tokens_per_s";
  s.noun = "devices";
  s.title = "workload " + a.setup.workload.name + " (" + std::to_string(a.setup.workload.agents.size()) +
            " agents, global batch " + std::to_string(a.global_batch) + ") on " + profile->name +
            ", decode efficiency " + format_number("%.3f", a.setup.efficiency.decode) + " (measured), sync's " +
            format_number("%.3f", *efficiency) + (fit_json != "null" ? " (fitted to the paper's sync step)" : "");
  s.estimate = "one measured step";
  s.step_in_ms = false;
  s.detail_name = "placement";
  for (models::flexmarl::Framework f : *frameworks)
    s.families.push_back(std::string(models::flexmarl::framework_name(f)));
  s.ladder = sim::node_ladder(profile->devices_per_node, a.plan.max_workers);
  s.facts = {{"workload", a.setup.workload.name},     {"agents", a.setup.workload.agents.size()},
             {"global_batch", a.global_batch},        {"decode_efficiency", a.setup.efficiency.decode},
             {"sync_decode_efficiency", *efficiency}, {"calibration", nlohmann::ordered_json::parse(fit_json)}};
  s.describe = [&](int family, nlohmann::ordered_json& j) { j["framework"] = s.families[family]; };
  const models::flexmarl::DeviceFacts facts = sim::flexmarl::device_facts(*profile);
  s.fits = [&](int family, int devices) {
    return models::flexmarl::deploy(a.setup.workload, (*frameworks)[family], devices, facts, a.setup.efficiency)
        .is_ok();
  };
  s.confirm = [&](int family, int devices) { return confirm_command(a, s.families[family], devices); };
  s.evaluate = [&](const std::vector<std::pair<int, int>>& points, bool exact) {
    return evaluate_points(a, *profile, *frameworks, facts, s.families, points, exact);
  };
  return run_plan(a.plan, s, started);
}

}  // namespace

void add_plan_flexmarl(CLI::App* plan, Action* action) {
  auto a = std::make_shared<FlexMarlPlanArgs>();
  a->plan.platform = "npu-768";
  CLI::App* cmd = plan->add_subcommand(
      "flexmarl",
      "FlexMARL: which framework (sync, marti, flexmarl; the ablations flexmarl-nobalance, flexmarl-noasync on "
      "request) generates the target tokens per second on the fewest devices, with a fixed batch per agent and "
      "step. The twin of 'clustertwin sim flexmarl' (on npu-768 the synchronous baseline's decode efficiency is fitted "
      "to the paper's sync "
      "step first); each framework's own placement at each count; the search steers by one-measured-step "
      "estimates and the answer is run with sim flexmarl's steps, which its confirm command repeats.");
  add_plan_options(cmd, &a->plan, "Generated tokens per second the whole cluster must reach (e.g. 850)",
                   "Shipped profile (npu-768, ...) or a YAML file");
  cmd->add_option("--frameworks", a->frameworks, "Frameworks to consider, comma-separated, or all")
      ->capture_default_str();
  cmd->add_option("--agents", a->agents,
                  "Agents by model size: 3x14B, 5x32B, 3x32B+7x14B; default: the paper's MA workload (three 14B)");
  cmd->add_option("--global-batch", a->global_batch, "Samples per agent per step")->capture_default_str();
  cmd->add_option("--calibration", a->calibration, "As sim flexmarl: auto, paper or none")->capture_default_str();
  cmd->add_option("--device-profile", a->device_profile,
                  "As sim flexmarl: the device profile whose measured decode the engines run at")
      ->capture_default_str();
  cmd->add_option("--steps", a->setup.steps, "Steps of the exact runs (the first is warm-up)")->capture_default_str();
  cmd->callback([a, action] { *action = [a] { return in_flexmarl_flag_words(run_plan_flexmarl(*a)); }; });
}

}  // namespace clustertwin::cli
