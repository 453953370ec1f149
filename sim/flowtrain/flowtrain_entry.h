#pragma once

// FlowTrain's entry in the twin registry (sim/core/twin.h): a job's fields
// as `sim flowtrain` takes them (mode, model, encoder_workers, global_batch,
// micro_batch_tokens, pool_memory, gemm_efficiency, attention_efficiency,
// tp_overlap), and the job as FlowTrain's own actors (flowtrain_job.h).

#include "sim/core/twin.h"
#include "sim/flowtrain/flowtrain_twin.h"

namespace clustertwin::sim::flowtrain {

/// A FlowTrain job's settings: `sim flowtrain`'s defaults where the job gives none.
struct FlowTrainJobSettings : TwinSettings {
  FlowTrainSetup setup;
  FlowTrainMode mode = FlowTrainMode::kFlowTrain;
};

/// The setup a job of `settings` runs: the frame's workers and steps, the dataset seeded by its seed.
FlowTrainSetup job_setup(const FlowTrainJobSettings& settings, const JobFrame& frame);

/// How FlowTrain's messages name a setting of the job: "mix.yaml: field
/// 'jobs[1].pool_memory': " for pool_memory, the file's field 'profile'
/// for the profile.
SettingName job_setting_name(const JobFrame& frame);

}  // namespace clustertwin::sim::flowtrain
