#pragma once

// FlexMARL's twin: the frameworks of models/flexmarl/frameworks.h run as an
// event-driven SimGrid model on a cluster profile.
//
// One orchestrator actor holds the run's state and drives SimGrid
// activities; it calls the same policy code as the real executor (the load
// balancer, the placement, the cost formulas, the response lengths):
//
//   rollout instance   continuous batching: a decode chunk is one exec on the
//                      instance's first device, lasting the prefill of newly
//                      admitted requests plus k decode iterations, where k
//                      brings the shortest active request to its end; a new
//                      request that finds a free slot cuts the chunk (its
//                      progress is kept) and joins the next one
//   trainer group      an exec per micro-batch (or batch) of training, then
//                      the optimizer step; an agent's state (weights,
//                      gradients, Adam) swapped between host and device over
//                      the host links when the group changes agent
//   transfers          weight publish (trainer devices to the agent's
//                      instance devices) and engine reloads as SimGrid flows
//                      over the platform's links
//
// Utilisation counts a device busy while it decodes, prefills, trains or
// steps the optimizer (transfers are not work); it is device-seconds of work
// over devices x step time, for the devices the run uses.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/flexmarl/frameworks.h"
#include "models/flexmarl/schedule.h"
#include "models/flexmarl/workload.h"

namespace clustertwin::sim::flexmarl {

struct FlexMarlSetup {
  models::flexmarl::Workload workload = models::flexmarl::ma_workload();
  /// Devices the run uses: 0 gives each agent a node of the profile
  /// (assumption: the paper does not say how many of its 768 NPUs each
  /// workload used), at most the whole profile.
  int devices = 0;
  double gap_threshold = 5;  // the paper's load-gap trigger, requests
  int steps = 4;             // simulated steps; the first is warm-up
  uint64_t seed = 0;
  models::flexmarl::EngineEfficiency efficiency;
};

/// The device count `setup` runs on for `profile` (resolving devices = 0).
int flexmarl_devices(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile);
/// InvalidArgument naming the field and value: the workload's checks, the
/// gap threshold, steps, the device count against the profile.
Status validate(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile);
/// The profile's device as the cost formulas see it.
models::flexmarl::DeviceFacts device_facts(const cluster::ClusterProfile& profile);
/// The engines' measured decode efficiency (EngineEfficiency::decode): the
/// device profile `name_or_path`'s decode_bandwidth_share; `*provenance`
/// (optional) its provenance line. InvalidArgument naming the profile when
/// it measured no decode.
StatusOr<double> engine_decode_efficiency(const std::string& name_or_path, std::string* provenance = nullptr);
/// The device profile the FlexMARL twin's engines are measured on by default.
inline constexpr const char* kDefaultDeviceProfile = "h200";

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

/// Runs one framework (in a child process: SimGrid keeps global state).
StatusOr<FlexMarlRow> run_flexmarl(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile,
                                   models::flexmarl::Framework framework);

/// Runs each framework; fills speedup and utilisation gain against sync
/// when sync is among them. `progress` (optional) after each.
StatusOr<std::vector<FlexMarlRow>> run_flexmarl_frameworks(
    const FlexMarlSetup& setup, const cluster::ClusterProfile& profile,
    const std::vector<models::flexmarl::Framework>& frameworks,
    const std::function<void(const FlexMarlRow&, int done, int total)>& progress = {});

/// The paper's MAS-RL step on the MA workload (../shared/papers/flexmarl.md).
inline constexpr double kPaperSyncStepS = 914.4;

std::string flexmarl_rows_json(const std::vector<FlexMarlRow>& rows, const std::string& extra = "");
std::string flexmarl_rows_csv(const std::vector<FlexMarlRow>& rows);
std::string flexmarl_rows_table(const std::vector<FlexMarlRow>& rows);
/// Per-device busy share of the last step in `bins` time bins: CSV
/// "device,time_s,busy" (a heatmap's input).
std::string flexmarl_timeline_csv(const FlexMarlRow& row, int bins);
/// The last step as a Perfetto/Chrome trace (the traces/ schema): a track
/// per device group.
Status write_flexmarl_trace(const FlexMarlRow& row, const std::string& platform, const std::string& path);

}  // namespace clustertwin::sim::flexmarl
