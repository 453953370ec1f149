// clustertwin plan mix: the fewest nodes, and a placement, on which every
// job of a mix meets its throughput target (sim/mix/mix_plan.h).

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/plan.h"
#include "common/progress.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "sim/mix/mix_plan.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::cli {
namespace {

struct PlanMixArgs {
  std::string file;
  std::string placements = "packed,spread,isolated";
  int64_t seed = -1;
  bool json = false;
  int top_links = 5;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

Status plan_mix(const PlanMixArgs& a) {
  const auto started = std::chrono::steady_clock::now();
  sim::mix::MixPlanOptions o;
  o.placements = split_commas(a.placements);
  if (a.seed >= 0) {
    o.seed = static_cast<uint64_t>(a.seed);
    o.seed_given = true;
  }
  o.parallel = a.parallel;
  o.top_links = a.top_links;
  o.progress = [](const std::string& line) { show_progress(false, "%s", line.c_str()); };
  auto mix = sim::mix::read_mix(a.file);
  if (!mix.is_ok()) return mix.status();
  auto profile = cluster::load_cluster_profile(mix->profile);
  if (!profile.is_ok()) return profile.status().with_context(a.file + ": field 'profile'");
  auto plan = sim::mix::plan_mix(*mix, *profile, o);
  end_progress();
  if (!plan.is_ok()) return plan.status();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  show_progress(true, "plan mix: %zu mixes tried, %d simulations, %.1f s", plan->tries.size(), plan->simulations, wall);
  CT_RETURN_IF_ERROR(write_output("-", a.json ? sim::mix::mix_plan_json(*plan) : sim::mix::mix_plan_table(*plan)));
  if (!plan->feasible) return Status::check_failed("plan mix " + a.file + ": " + plan->why_not);
  return Status::ok();
}

}  // namespace

void add_plan_mix(CLI::App* plan, Action* action) {
  auto a = std::make_shared<PlanMixArgs>();
  CLI::App* cmd = plan->add_subcommand(
      "mix",
      "The fewest nodes, and a placement, on which every job of a mix meets its throughput target while they share "
      "the fabric (docs/mix.md, 'Capacity over a mix'). Jobs give `target: {samples_per_s: X, batch_per_worker: B}` "
      "or `{steps_per_s: X}` instead of, or as well as, `workers`. Each job without workers is first sized alone "
      "(the plan SYSTEM search: the fewest nodes that meet its target, and one node fewer that misses); those sizes "
      "together are a lower bound. Then the mix runs under each placement policy; where contention makes a job miss, "
      "that job grows (by one node, or to what its rate in the mix proves it needs) or a policy that keeps the jobs "
      "off each other's links wins, until every target holds. Prints each job's workers, nodes, throughput alone and "
      "in the mix against its target, the contended links, and every mix tried. Exit code 3 when nothing fits the "
      "profile.");
  cmd->add_option("MIX", a->file, "Job mix file (YAML) whose jobs carry targets")->required();
  cmd->add_option("--placements", a->placements,
                  "Placement policies to try, in order of preference: packed (fill pods in order), spread "
                  "(round-robin across pods), random (seeded), isolated (each job on pods of its own; needs spare "
                  "nodes in partly used pods)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the random placement and the jobs (default: the mix file's seed, else 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 31));
  cmd->add_flag("--json", a->json, "Print JSON instead of the table");
  cmd->add_option("--top-links", a->top_links, "Contended links to list for the answer")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--parallel", a->parallel, "Simulations at a time, each in its own process (default: cores)")
      ->check(CLI::Range(1, 256));
  cmd->callback([a, action] {
    *action = [a] { return in_flag_words(plan_mix(*a), {{"placements", "--placements"}}); };
  });
}

}  // namespace clustertwin::cli
