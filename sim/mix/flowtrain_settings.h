#pragma once

// A FlowTrain job of a mix (`system: flowtrain`): its settings as `sim
// flowtrain` takes them, read from the job's entry, and checked against the
// cluster before anything runs.

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/field_reader.h"
#include "sim/flowtrain/flowtrain_twin.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {

/// Reads a flowtrain job's settings from its entry (`job` has read name,
/// workers, steps, warmup and drain): mode, model, encoder_workers,
/// global_batch, micro_batch_tokens, pool_memory, gemm_efficiency,
/// attention_efficiency and tp_overlap, each optional with `sim flowtrain`'s
/// default. InvalidArgument naming the file and field for a bad value, an
/// unknown mode, or warmup or drain (FlowTrain's first step is its warm-up).
Status read_flowtrain_settings(cluster::FieldReader& job, JobSpec* out);

/// How FlowTrain's messages name a setting of `job`: "mix.yaml: field
/// 'jobs[1].pool_memory': " for --pool-memory, the mix's field 'profile'
/// for the profile.
flowtrain::SettingName flowtrain_setting_name(const std::string& file, const JobSpec& job);

/// `job`'s FlowTrain setup: its settings with the job's workers and steps
/// and the dataset seeded by `seed`.
flowtrain::FlowTrainSetup flowtrain_setup(const JobSpec& job, uint64_t seed);

/// Checks a flowtrain job on `profile` as FlowTrain's twin would, without
/// simulating: its settings, and that the mode's layouts fit the devices'
/// memory (an impossible split, a model too large for the workers).
/// InvalidArgument naming the mix file and the job's field.
Status check_flowtrain_job(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile);

}  // namespace clustertwin::sim::mix
