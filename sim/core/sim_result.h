// What a plan run in the twin predicts (SimResult): filled by the run
// (plan_run.h), returned by the plan simulator (simulator.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/collective_runner.h"

namespace clustertwin::sim {

/// One layer of the breakdown, per rank and measured step.
struct LayerMetrics {
  std::string name;
  double busy_s = 0;     // time some task of the layer runs
  double exposed_s = 0;  // ... while no task of an earlier layer runs
};

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

}  // namespace clustertwin::sim
