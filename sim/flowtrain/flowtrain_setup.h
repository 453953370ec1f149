#pragma once

// What a FlowTrain twin run is given (a mode and a FlowTrainSetup), its
// checks, and the profile's device as the cost formulas see it: read by the
// twin's entry (flowtrain_twin.h), its job (flowtrain_job.h) and its model
// (flowtrain_model.h).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/device_profile.h"
#include "models/flowtrain/allocator.h"
#include "models/flowtrain/timing.h"
#include "models/flowtrain/vlm.h"

namespace clustertwin::sim::flowtrain {

enum class FlowTrainMode { kMonolithic, kDisaggSync, kFlowTrain };
const char* flowtrain_mode_name(FlowTrainMode mode);
/// "all" or a comma-separated list of monolithic, disagg-sync, flowtrain;
/// InvalidArgument naming the unknown one.
StatusOr<std::vector<FlowTrainMode>> parse_flowtrain_modes(const std::string& list);

struct FlowTrainSetup {
  std::string model = "6B+72B";
  int workers = 1024;
  int global_batch = 4096;             // samples per step
  int64_t micro_batch_tokens = 16384;  // backbone tokens per packed micro-batch
  int encoder_workers = -1;            // >= 1: force the split; -1: the allocator's
  double pool_bytes = 8e9;             // pool room per encoder worker
  int steps = 3;                       // simulated steps; the first is warm-up
  models::flowtrain::DatasetOptions data;
  models::flowtrain::DeviceModel device;  // efficiencies; the rest comes from the profile
};

/// How a setting is named in a message: given the setup's field
/// ("pool_memory"; "profile" for the cluster profile), the words that
/// start the message, before the bad value. Empty: the field and a space
/// ("pool_memory 1MB: smaller than one sample ...", which `sim flowtrain`
/// says with its flag: --pool-memory); a job mix names its own field
/// ("mix.yaml: field 'jobs[1].pool_memory': 1MB: ...").
using SettingName = std::function<std::string(const std::string& option)>;

/// InvalidArgument naming the setting (by `name`) and value: an unknown
/// model, the worker count against the profile, a split with no encoder or
/// no backbone worker, a pool smaller than one sample, batch and
/// micro-batch sizes, steps.
Status validate(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, const SettingName& name = {});

/// Sets setup's device curves from a measured device profile
/// (models/cluster/device_profile.h). InvalidArgument naming both when the
/// device profile's peak is not the platform's (within 1%): its efficiencies
/// are shares of its own peak.
Status use_device_profile(const cluster::DeviceProfile& device, const cluster::ClusterProfile& platform,
                          FlowTrainSetup* setup);

/// The device model of `profile` with setup's efficiencies.
models::flowtrain::DeviceModel flowtrain_device(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile);

// What the setup's checks and the model (flowtrain_model.h) both price with.
namespace detail {

inline constexpr double kBytesPerValue = 2;  // bf16 embeddings and gradients

/// The profile's bf16 peak (else its first), FLOP/s.
double peak_of(const cluster::ClusterProfile& profile);

}  // namespace detail

}  // namespace clustertwin::sim::flowtrain
