#pragma once

// Fitting the FlexMARL twin's one free parameter, the decode efficiency of
// MAS-RL's engine (sync), to the paper's MAS-RL step (914.4 s on the MA
// workload); every FlexMARL figure comes out of the model, its engines
// decoding at the measured efficiency (EngineEfficiency::decode).

#include <string>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/flexmarl/flexmarl_twin.h"

namespace clustertwin::calibrators {

/// Fits setup.efficiency.sync_decode so that `sync` takes `target_s` per
/// step on `setup` (the only fitted parameter: FlexMARL's figures follow from
/// the model). Decode dominates sync's step; its time is a + b / efficiency,
/// solved from two runs and refined. InvalidArgument when no efficiency in
/// (0, 1] reaches the target.
struct SyncFit {
  double decode_efficiency = 0;
  double step_s = 0;  // sync's step with it
  int runs = 0;
};
StatusOr<SyncFit> calibrate_sync(const sim::flexmarl::FlexMarlSetup& setup, const cluster::ClusterProfile& profile,
                                 double target_s = sim::flexmarl::kPaperSyncStepS);

/// Sync's (MAS-RL's) decode efficiency for `setup` on `profile`: fitted so
/// that sync takes the paper's step on its MA workload (with this setup's
/// batch settings) when `calibration` asks ("paper"; "auto" on npu-768), else
/// setup.efficiency.decode, the other engines' ("none"). `*fit_json`
/// (optional): the fit, "null" without. Used by sim flexmarl and plan
/// flexmarl.
StatusOr<double> flexmarl_sync_decode_efficiency(const sim::flexmarl::FlexMarlSetup& setup,
                                                 const cluster::ClusterProfile& profile, const std::string& calibration,
                                                 std::string* fit_json);

}  // namespace clustertwin::calibrators
