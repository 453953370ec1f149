#pragma once

// What a FlexMARL twin run gives back (FlexMarlRow): filled by the model
// (flexmarl_model.h), returned and written by the twin's entry
// (flexmarl_twin.h).

#include <cstdint>
#include <string>
#include <vector>

#include "models/flexmarl/schedule.h"

namespace clustertwin::sim::flexmarl {

/// A busy interval of some devices (for the timeline and the trace).
struct BusyInterval {
  int first_device = 0;
  int devices = 1;
  double start_s = 0, end_s = 0;
  int agent = 0;
  std::string kind;  // "decode", "train", "optimizer", "swap", "publish", "reload"
};

/// One framework's run, in the units the paper uses.
struct FlexMarlRow {
  std::string framework;
  std::string workload;
  int agents = 0;
  int devices = 0;
  double step_s = 0;            // mean over the measured steps (all but the first)
  double rollout_s = 0;         // mean time from a step's start to its last response
  double tokens_per_s = 0;      // generated (response) tokens per second
  double utilization = 0;       // device-seconds of work / (devices x step time)
  double speedup = 0;           // sync's step / this one (0 without sync in the sweep)
  double utilization_gain = 0;  // this utilisation / sync's (0 without sync)
  int64_t reassignments = 0;    // inter-agent instance moves, per step
  int64_t migrations = 0;       // intra-agent request moves, per step
  std::vector<double> step_times_s;
  std::vector<BusyInterval> last_step;  // the last step's intervals, times from its start
  /// The schedule's decisions (models/flexmarl/schedule.h), every step, in
  /// the order the twin took them; not in the rows' JSON or CSV.
  std::vector<models::flexmarl::Decision> decisions;
  double wall_s = 0;
};

}  // namespace clustertwin::sim::flexmarl
