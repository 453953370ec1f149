#pragma once

// The twin of `run flowtrain` on one machine: every rank's program as the
// real executor runs it (the same step plan, models/flowtrain/tiny_plan.h)
// on simulated processes sharing the machine's C cores (one SimGrid host,
// none faster than one core: the real ranks run one torch thread each).
//
//   compute    flowtrain/encoder, encoder_backward, backbone: CPU time, a
//              line in the task's model FLOPs
//   hand-offs  pool_put, pool_take, transfer (a send): CPU time, a line in
//              bytes; the consumer sees a sample a fixed hand-off latency
//              after its producer finished it (the pool's back-off wake-up,
//              Gloo over loopback); a producer waits for a free slot of its
//              own pool
//   allreduce  each side's members meet, then the CPU line in bytes plus
//              the exchange (per byte and ring step), no core held
//   optimizer  a line in the bytes it updates
//
// On a GPU machine (FlowTrainProcessSetup::gpus > 0) a task's CPU part
// (launching its kernels, the host's own work) is followed by a device part:
// the time its thread then waits for the device (the kernels the launches
// did not hide, a synchronising copy), a line in the same size, run on the
// rank's GPU (rank r on GPU r % gpus; ranks sharing a GPU share its time).
//
// What it predicts is the schedule: the modes' waits and overlaps and the
// cores' (and GPUs') contention.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/flowtrain/tiny_plan.h"

namespace clustertwin::sim::flowtrain {

struct FlowTrainKeyCost {
  double latency_s = 0;
  double seconds_per_unit = 0;  // per FLOP (compute) or byte
  double device_latency_s = 0;  // on a GPU machine: the device part, a line in the same size
  double device_seconds_per_unit = 0;
};

struct FlowTrainProcessCosts {
  std::map<std::string, FlowTrainKeyCost> keys;  // "flowtrain/encoder", ...
  double handoff_latency_s = 0;
  /// An all-reduce beyond its CPU, once all members are there: this times the buffer's bytes times the ring's
  /// 2 (n - 1) / n.
  double exchange_s_per_byte = 0;
};

struct FlowTrainProcessSetup {
  std::string mode = "flowtrain";  // monolithic | disagg-sync | flowtrain
  int world = 4;
  int encoders = 1;  // split modes
  int steps = 3;
  int global_batch = 16;
  int64_t micro_batch_tokens = 256;
  int pool_slots = 16;
  uint64_t seed = 0;
  int cores = 2;
  int gpus = 0;  // GPUs the ranks share (rank r on GPU r % gpus); 0: a CPU machine, no device parts
  models::flowtrain::TinyFacts facts;
};

struct FlowTrainProcessResult {
  std::vector<double> step_s;
  std::map<std::string, double> cpu_s;  // per cost key, all steps
  /// Per cost key, from step `first_step` of the run on: the tasks' time (start to end, the wait for a core or
  /// a GPU included) and their count.
  std::map<std::string, std::pair<double, int64_t>> wall_s;
};

/// InvalidArgument naming the field: the mode, ranks and cores, a cost key
/// the mode needs and the costs lack.
Status validate(const FlowTrainProcessSetup& setup, const FlowTrainProcessCosts& costs);

/// Runs the twin (in a child process: SimGrid keeps global state).
StatusOr<FlowTrainProcessResult> run_flowtrain_process_twin(const FlowTrainProcessSetup& setup,
                                                            const FlowTrainProcessCosts& costs, int first_step = 0);

}  // namespace clustertwin::sim::flowtrain
