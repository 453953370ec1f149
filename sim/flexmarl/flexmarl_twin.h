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
#include "sim/flexmarl/flexmarl_row.h"
#include "sim/flexmarl/flexmarl_setup.h"

namespace clustertwin::sim::flexmarl {

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
