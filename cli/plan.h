#pragma once

// clustertwin plan SYSTEM: what every system's planner shares
// (cli/plan_command.cpp: the options, the search's report as text or JSON)
// and what each system brings (cli/nestpipe/plan.cpp, cli/flowtrain/plan.cpp,
// cli/flexmarl/plan.cpp: its configurations, the counts they fit, the twin runs
// that evaluate them, and the command that confirms an answer).

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "sim/core/capacity_search.h"

namespace clustertwin::cli {

/// The options of every plan subcommand.
struct PlanOptions {
  double target = 0;
  double min_efficiency = 0;
  std::string platform;
  int max_workers = 0;  // 0: the platform's devices
  bool json = false;
  int runner_ups = 3;
  int parallel = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string plot;  // a PNG of every simulated point, "" for none
};

/// The steps of an estimate run in the FlowTrain and FlexMARL planners: one
/// measured step after the warm-up (the exact runs take sim's default steps).
constexpr int kPlanEstimateSteps = 2;

/// One system's side of a plan.
struct PlanSystem {
  std::string system;                      // "nestpipe"
  std::string unit = "samples/s";          // the throughput's unit, as printed
  std::string unit_key = "samples_per_s";  // ... and as a JSON key
  std::string noun = "workers";            // what the ladder counts ("devices" for FlexMARL)
  std::string platform;                    // the profile's name
  std::string title;                       // the first line, after "# clustertwin plan SYSTEM: "
  std::string estimate;                    // what an estimate is: "one measured step"
  bool step_in_ms = true;                  // print steps in ms (else s)
  std::string detail_name;                 // what a point's detail is ("split and layouts"), "" when none
  std::vector<std::string> families;
  std::vector<int> ladder;
  std::function<bool(int family, int count)> fits;  // empty: every family fits at every count
  sim::CapacityEvaluator evaluate;
  /// The `clustertwin sim ...` command that reproduces an exact point.
  std::function<std::string(int family, int count)> confirm;
  /// The system's fields of a point's JSON (the variant, the split, ...).
  std::function<void(int family, nlohmann::ordered_json& point)> describe;
  /// The system's fields of the JSON's header (the model, the batch, the calibration).
  nlohmann::ordered_json facts = nlohmann::ordered_json::object();
};

/// Adds --target-throughput, --min-efficiency, --platform, --max-workers,
/// --runner-ups, --json, --parallel and --plot to `cmd`.
void add_plan_options(CLI::App* cmd, PlanOptions* o, const std::string& target_help, const std::string& platform_help);

/// --target-throughput and --min-efficiency (sim::check_capacity_target), in
/// the flags' words; for a planner to check before its slow preparations.
Status check_plan_target(const PlanOptions& o);

/// Checks the options a user typed, before any slow preparation; resolves
/// max_workers against the platform's `devices`.
Status check_plan_options(PlanOptions* o, int devices, const std::string& platform_name);

/// Searches `s` for the target and prints the answer (text or JSON), and
/// draws --plot. Exit code 3 (check_failed) when nothing meets the target.
Status run_plan(const PlanOptions& o, const PlanSystem& s, std::chrono::steady_clock::time_point started);

/// clustertwin plan mix (cli/plan_mix_command.cpp): sizes a mix's jobs by their targets.
void add_plan_mix(CLI::App* plan, Action* action);

/// Each system's planner (cli/SYSTEM/plan.cpp), one per system of common/systems.def.
#define CT_SYSTEM(name, title) void add_plan_##name(CLI::App* plan, Action* action);
#include "common/systems.def"
#undef CT_SYSTEM

}  // namespace clustertwin::cli
