#pragma once

// What a FlowTrain twin run gives back (FlowTrainRow): filled by the model
// (flowtrain_model.h), returned and written by the twin's entry
// (flowtrain_twin.h).

#include <string>
#include <vector>

namespace clustertwin::sim::flowtrain {

/// A busy interval of a group of devices (the trace and the timeline).
struct FlowTrainInterval {
  int first_device = 0, devices = 1;
  double start_s = 0, end_s = 0;
  std::string kind;  // "train", "encoder", "backbone", "encoder-backward", "drain", "reduce-scatter", "optimizer"
};

struct FlowTrainRow {
  std::string mode;
  std::string model;
  int workers = 0;
  int encoder_workers = 0;  // 0 for monolithic (every worker runs both)
  int encoder_tp = 0, backbone_tp = 0, backbone_pp = 0;
  double step_s = 0;  // mean over the measured steps (all but the first)
  double samples_per_s = 0;
  double mfu = 0;
  double speedup = 0;                // against monolithic (0 without it)
  double allocator_rate = 0;         // what the allocator's closed form expected, samples/s
  double micro_batch_imbalance = 0;  // max/mean backbone cost of the step's micro-batches
  std::vector<double> step_times_s;
  std::vector<FlowTrainInterval> last_step;  // times from the last step's start
  double wall_s = 0;
};

}  // namespace clustertwin::sim::flowtrain
