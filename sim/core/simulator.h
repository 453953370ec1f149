#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/plan/plan.h"
#include "sim/core/collective_runner.h"

namespace clustertwin::sim {

/// Tasks grouped by cost key, for the exposed-time breakdown.
struct BreakdownLayer {
  std::string name;
  std::vector<std::string> cost_keys;
};

/// How to run a plan in the twin.
struct SimOptions {
  int workers = 1;
  int steps = 6;         // steps simulated
  int warmup_steps = 2;  // steps before the measured window (pipelines fill up)
  int drain_steps = 1;   // steps after it (the last steps of a pipeline run with nothing behind them)
  /// Collective fidelity; `auto_fidelity` picks step up to kStepFidelityMaxWorkers workers, flow above.
  Fidelity fidelity = Fidelity::kFlow;
  bool auto_fidelity = true;
  uint64_t seed = 0;      // recorded in the trace; the twin itself draws no random numbers yet
  std::string trace_out;  // write the simulated trace here ("" for none)
  /// Flow fidelity merges a uniform exchange per (node, switch group) among
  /// more nodes than this, per node pair below (the same result where the
  /// exchange is uniform; a test holds them together).
  int group_merge_min_nodes = 32;
  /// Simulate one worker per node (the node's first) when every worker of a
  /// node provably does the same: a homogeneous profile without stragglers,
  /// no platform file, every task on every rank, collectives over the world,
  /// a node or blocks of whole nodes. The simulated workers' collectives
  /// still move every member's bytes, so the network sees the whole load;
  /// the other workers' compute runs on devices of their own and would change
  /// nothing. 16 times fewer actors on 16-device nodes; a test holds the two
  /// modes to each other. False simulates every worker.
  bool symmetric = true;
  /// Store one route per node pair instead of computing routes on demand
  /// (Platform::Routes::kStored): the same simulation, quadratic to build;
  /// for the tests that hold the two together.
  bool stored_routes = false;
  /// Price each distinct collective once where the run provably keeps the
  /// fabric to one collective at a time (exclusive_network in
  /// sim/core/collective_shortcut.h): the first is moved as flows, later
  /// identical ones take its time, and at step fidelity a phase's rounds
  /// after the first take the first one's time. The same results as the
  /// flows (tests hold them within 1e-9); false moves every collective as
  /// flows, for comparison. A job mix turns it off (the jobs share links).
  bool collective_shortcut = true;
  /// Layers of the exposed-time breakdown (SimResult::breakdown), in order of
  /// precedence: a layer's exposed time is its busy time minus what earlier
  /// layers already cover.
  std::vector<BreakdownLayer> breakdown;
};

/// One layer of the breakdown, per rank and measured step.
struct LayerMetrics {
  std::string name;
  double busy_s = 0;     // time some task of the layer runs
  double exposed_s = 0;  // ... while no task of an earlier layer runs
};

inline constexpr int kStepFidelityMaxWorkers = 64;

/// Busy time of one stream, averaged over ranks, per measured step.
struct StreamMetrics {
  std::string stream;
  double busy_s = 0;
  double utilization = 0;  // busy / step time
};

/// Duration of one plan task, averaged over the ranks that run it and the measured steps.
struct TaskMetrics {
  std::string name;
  double mean_s = 0;
  double max_s = 0;
};

/// What a twin run predicts. Per-step figures are means over the measured
/// steps (after the warm-up) and over ranks.
struct SimResult {
  std::string system;
  std::string variant;
  std::string platform;
  int workers = 0;
  int steps = 0;
  int warmup_steps = 0;
  int drain_steps = 0;
  Fidelity fidelity = Fidelity::kFlow;
  double step_time_s = 0;          // steady state: (end of the last measured step - end of warm-up) / measured steps
  std::vector<double> step_end_s;  // end of each step (last task of the step on any rank)
  double compute_s = 0;            // busy time of compute tasks
  double comm_s = 0;               // time some collective of the rank runs
  double exposed_comm_s = 0;       // ... while no compute task of the rank runs
  double mfu = 0;                  // model FLOPs utilisation of compute tasks against the device peak
  std::vector<StreamMetrics> streams;
  std::vector<TaskMetrics> tasks;       // in plan order
  std::vector<LayerMetrics> breakdown;  // as SimOptions::breakdown asked
  int simulated_workers = 0;            // workers run as actors (fewer than workers when symmetric)
  int64_t events = 0;                   // tasks executed, all ranks and steps
  int64_t collectives_priced_once = 0;  // collective runs that took an earlier identical one's time (no flows)
  double wall_s = 0;                    // host seconds the simulation took
};

/// Runs `plan` on `profile` with `options.workers` workers in SimGrid.
///
/// Each simulation runs in a child process (SimGrid allows one engine per
/// process), so callers can run many, in parallel if they like; the result
/// comes back through a pipe. InvalidArgument for a plan that does not fit
/// the world (see models/plan/plan_validator.h) or a task the profile cannot
/// price; Internal when the simulation fails.
StatusOr<SimResult> simulate_plan(const models::Plan& plan, const cluster::ClusterProfile& profile,
                                  const SimOptions& options);

/// One simulation of a sweep.
struct SimJob {
  const models::Plan* plan = nullptr;
  const cluster::ClusterProfile* profile = nullptr;
  SimOptions options;
};

/// Runs `jobs` with up to `parallel` simulations at a time (each in its own
/// child process); results come back in job order, the same as one by one.
std::vector<StatusOr<SimResult>> simulate_many(const std::vector<SimJob>& jobs, int parallel);

/// The result as one JSON object (deterministic: same inputs, same bytes).
std::string sim_result_to_json(const SimResult& result);
StatusOr<SimResult> sim_result_from_json(const std::string& text);

}  // namespace clustertwin::sim
