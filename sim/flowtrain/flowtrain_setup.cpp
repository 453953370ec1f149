#include "sim/flowtrain/flowtrain_setup.h"

#include <cmath>

#include "common/text.h"
#include "models/cluster/units.h"

namespace clustertwin::sim::flowtrain {
namespace {

using detail::kBytesPerValue;
using detail::peak_of;

const char* const kModeNames[] = {"monolithic", "disagg-sync", "flowtrain"};

}  // namespace

namespace detail {

double peak_of(const cluster::ClusterProfile& profile) {
  auto it = profile.device.peak_flops.find("bf16");
  return it != profile.device.peak_flops.end() ? it->second : profile.device.peak_flops.begin()->second;
}

}  // namespace detail

const char* flowtrain_mode_name(FlowTrainMode mode) {
  return kModeNames[static_cast<int>(mode)];
}

StatusOr<std::vector<FlowTrainMode>> parse_flowtrain_modes(const std::string& list) {
  std::vector<FlowTrainMode> out;
  if (list == "all")
    return std::vector<FlowTrainMode>{FlowTrainMode::kMonolithic, FlowTrainMode::kDisaggSync,
                                      FlowTrainMode::kFlowTrain};
  for (const std::string& name : split_commas(list)) {
    bool found = false;
    for (int m = 0; m < 3; ++m) {
      if (name == kModeNames[m]) {
        out.push_back(static_cast<FlowTrainMode>(m));
        found = true;
      }
    }
    if (!found) {
      return Status::invalid_argument("mode '" + name +
                                      "': unknown (allowed: monolithic, disagg-sync, flowtrain, all)");
    }
  }
  if (out.empty()) return Status::invalid_argument("mode '': name at least one mode");
  return out;
}

models::flowtrain::DeviceModel flowtrain_device(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile) {
  models::flowtrain::DeviceModel d = setup.device;
  d.peak_flops = peak_of(profile);
  d.memory_bandwidth = profile.device.memory_bandwidth;
  d.link_bandwidth = profile.intra_node.link.bandwidth;
  d.link_latency_s = profile.intra_node.link.latency;
  return d;
}

Status use_device_profile(const cluster::DeviceProfile& device, const cluster::ClusterProfile& platform,
                          FlowTrainSetup* setup) {
  const double peak = platform.device.peak_flops.empty() ? 0 : peak_of(platform);
  if (!(std::abs(device.peak_flops - peak) <= 0.01 * peak)) {
    return Status::invalid_argument("device_profile " + device.name + ": its efficiencies are shares of " +
                                    format_number("%g", device.peak_flops / 1e12) + " TFLOP/s, but platform '" +
                                    platform.name + "' has a peak of " + format_number("%g", peak / 1e12) +
                                    " TFLOP/s: not the device it was measured on");
  }
  setup->device.gemm_curve = device.gemm;
  setup->device.attention_curve = device.attention;
  setup->device.attention_full_curve = device.attention_full;
  return Status::ok();
}

Status validate(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, const SettingName& name) {
  auto say = [&](const std::string& option) { return name ? name(option) : option + " "; };
  auto model = models::flowtrain::vlm_spec(setup.model);
  if (!model.is_ok()) return Status::invalid_argument(say("model") + model.status().message().substr(6));
  if (Status fits = cluster::check_worker_count(profile, setup.workers); !fits.is_ok()) return fits;
  if (setup.workers < 2) {
    return Status::invalid_argument(say("workers") + std::to_string(setup.workers) +
                                    ": FlowTrain's modes need at least 2 workers (an encoder and a backbone worker)");
  }
  if (setup.encoder_workers == 0 || setup.encoder_workers < -1 || setup.encoder_workers >= setup.workers) {
    return Status::invalid_argument(
        say("encoder_workers") + std::to_string(setup.encoder_workers) + " of " + std::to_string(setup.workers) +
        " workers: each side needs at least one worker (1.." + std::to_string(setup.workers - 1) + ")");
  }
  if (setup.global_batch < 1) {
    return Status::invalid_argument(say("global_batch") + std::to_string(setup.global_batch) + ": must be >= 1");
  }
  if (setup.micro_batch_tokens < setup.data.max_text + 8 * model->encoder.tokens_per_image()) {
    return Status::invalid_argument(
        say("micro_batch_tokens") + std::to_string(setup.micro_batch_tokens) + ": must hold the longest sample (" +
        std::to_string(setup.data.max_text + 8 * model->encoder.tokens_per_image()) + " tokens)");
  }
  const double largest = 8.0 * static_cast<double>(model->encoder.tokens_per_image()) *
                         static_cast<double>(model->backbone.hidden) * kBytesPerValue;
  if (!(setup.pool_bytes >= largest)) {
    return Status::invalid_argument(say("pool_memory") +
                                    cluster::format_quantity(setup.pool_bytes, cluster::Quantity::kSize) +
                                    ": smaller than one sample (the largest, 8 images, takes " +
                                    cluster::format_quantity(largest, cluster::Quantity::kSize) + " of embeddings)");
  }
  if (setup.steps < 2) {
    return Status::invalid_argument(say("steps") + std::to_string(setup.steps) +
                                    ": must be >= 2 (the first step is warm-up)");
  }
  if (profile.device.peak_flops.empty() || !(profile.device.memory_bytes > 0) ||
      !(profile.device.memory_bandwidth > 0) || !(profile.intra_node.link.bandwidth > 0)) {
    return Status::invalid_argument(say("profile") + "'" + profile.name +
                                    "': the FlowTrain twin needs the device's peak_flops, memory, memory_bandwidth "
                                    "and intra_node bandwidth");
  }
  // Below 0.1% of peak no kernel runs on any machine; a smaller share is a unit slip.
  if (!(setup.device.gemm_efficiency >= 1e-3 && setup.device.gemm_efficiency <= 1)) {
    return Status::invalid_argument(say("gemm_efficiency") + format_number("%g", setup.device.gemm_efficiency) +
                                    ": must be in [0.001, 1]");
  }
  if (!(setup.device.attention_efficiency >= 1e-3 && setup.device.attention_efficiency <= 1)) {
    return Status::invalid_argument(say("attention_efficiency") +
                                    format_number("%g", setup.device.attention_efficiency) + ": must be in [0.001, 1]");
  }
  if (!(setup.device.tp_overlap >= 0 && setup.device.tp_overlap <= 1)) {
    return Status::invalid_argument(say("tp_overlap") + format_number("%g", setup.device.tp_overlap) +
                                    ": must be in [0, 1]");
  }
  return Status::ok();
}

}  // namespace clustertwin::sim::flowtrain
