#include "sim/flowtrain/flowtrain_twin.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "common/text.h"
#include "models/cluster/units.h"
#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "sim/flowtrain/flowtrain_model.h"

namespace sg = simgrid::s4u;

namespace clustertwin::sim::flowtrain {
namespace {

using detail::FlowTrainRun;
using detail::kBytesPerValue;
using detail::kMeanSamples;
using detail::kModeNames;
using detail::Layouts;
using detail::peak_of;

models::flowtrain::AllocatorInputs allocator_inputs(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                                    const models::flowtrain::VlmSpec& model) {
  models::flowtrain::AllocatorInputs in;
  in.model = model;
  in.workers = setup.workers;
  in.devices_per_node = profile.devices_per_node;
  in.device = flowtrain_device(setup, profile);
  in.memory_bytes = profile.device.memory_bytes;
  in.global_batch = setup.global_batch;
  in.micro_batch_tokens = setup.micro_batch_tokens;
  in.encoder_workers = setup.encoder_workers;
  models::flowtrain::set_dataset_means(&in, setup.data, kMeanSamples);
  return in;
}

StatusOr<std::string> run_in_child(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                   FlowTrainMode mode, const models::flowtrain::VlmSpec& model,
                                   const Layouts& layouts) {
  TwinEngine twin;
  sg::Engine& engine = twin.engine();
  auto platform = Platform::build(profile, setup.workers);
  if (!platform.is_ok()) return platform.status();
  FlowTrainRun run(setup, profile, **platform, mode, model, layouts);
  Status status = Status::ok();
  sg::Actor::create("orchestrator", (*platform)->device(0), [&] { status = run.run(); });
  engine.run();
  CT_RETURN_IF_ERROR(status);
  return detail::row_to_json(run.result(), true).dump();
}

}  // namespace

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
      return Status::invalid_argument("--mode '" + name +
                                      "': unknown (allowed: monolithic, disagg-sync, flowtrain, all)");
    }
  }
  if (out.empty()) return Status::invalid_argument("--mode '': name at least one mode");
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
    return Status::invalid_argument("--device-profile " + device.name + ": its efficiencies are shares of " +
                                    format_number("%g", device.peak_flops / 1e12) + " TFLOP/s, but platform '" +
                                    platform.name + "' has a peak of " + format_number("%g", peak / 1e12) +
                                    " TFLOP/s: not the device it was measured on");
  }
  setup->device.gemm_curve = device.gemm;
  setup->device.attention_curve = device.attention;
  setup->device.attention_full_curve = device.attention_full;
  return Status::ok();
}

Status validate(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile) {
  auto model = models::flowtrain::vlm_spec(setup.model);
  if (!model.is_ok()) return Status::invalid_argument("--model " + model.status().message().substr(6));
  if (Status fits = cluster::check_worker_count(profile, setup.workers); !fits.is_ok()) return fits;
  if (setup.workers < 2) {
    return Status::invalid_argument("--workers " + std::to_string(setup.workers) +
                                    ": FlowTrain's modes need at least 2 workers (an encoder and a backbone worker)");
  }
  if (setup.encoder_workers == 0 || setup.encoder_workers < -1 || setup.encoder_workers >= setup.workers) {
    return Status::invalid_argument(
        "--encoder-workers " + std::to_string(setup.encoder_workers) + " of " + std::to_string(setup.workers) +
        " workers: each side needs at least one worker (1.." + std::to_string(setup.workers - 1) + ")");
  }
  if (setup.global_batch < 1) {
    return Status::invalid_argument("--global-batch " + std::to_string(setup.global_batch) + ": must be >= 1");
  }
  if (setup.micro_batch_tokens < setup.data.max_text + 8 * model->encoder.tokens_per_image()) {
    return Status::invalid_argument(
        "--micro-batch-tokens " + std::to_string(setup.micro_batch_tokens) + ": must hold the longest sample (" +
        std::to_string(setup.data.max_text + 8 * model->encoder.tokens_per_image()) + " tokens)");
  }
  const double largest = 8.0 * static_cast<double>(model->encoder.tokens_per_image()) *
                         static_cast<double>(model->backbone.hidden) * kBytesPerValue;
  if (!(setup.pool_bytes >= largest)) {
    return Status::invalid_argument("--pool-memory " +
                                    cluster::format_quantity(setup.pool_bytes, cluster::Quantity::kSize) +
                                    ": smaller than one sample (the largest, 8 images, takes " +
                                    cluster::format_quantity(largest, cluster::Quantity::kSize) + " of embeddings)");
  }
  if (setup.steps < 2) {
    return Status::invalid_argument("--steps " + std::to_string(setup.steps) +
                                    ": must be >= 2 (the first step is warm-up)");
  }
  if (profile.device.peak_flops.empty() || !(profile.device.memory_bytes > 0) ||
      !(profile.device.memory_bandwidth > 0) || !(profile.intra_node.link.bandwidth > 0)) {
    return Status::invalid_argument("profile '" + profile.name +
                                    "': the FlowTrain twin needs the device's peak_flops, memory, memory_bandwidth "
                                    "and intra_node bandwidth");
  }
  if (!(setup.device.gemm_efficiency > 0 && setup.device.gemm_efficiency <= 1)) {
    return Status::invalid_argument("--gemm-efficiency " + format_number("%g", setup.device.gemm_efficiency) +
                                    ": must be in (0, 1]");
  }
  if (!(setup.device.attention_efficiency > 0 && setup.device.attention_efficiency <= 1)) {
    return Status::invalid_argument("--attention-efficiency " + format_number("%g", setup.device.attention_efficiency) +
                                    ": must be in (0, 1]");
  }
  if (!(setup.device.tp_overlap >= 0 && setup.device.tp_overlap <= 1)) {
    return Status::invalid_argument("--tp-overlap " + format_number("%g", setup.device.tp_overlap) +
                                    ": must be in [0, 1]");
  }
  return Status::ok();
}

namespace {

// The allocator's layouts for `mode`, or InvalidArgument when none fits the devices' memory.
StatusOr<Layouts> choose_layouts(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                 FlowTrainMode mode, const models::flowtrain::VlmSpec& model) {
  const models::flowtrain::AllocatorInputs in = allocator_inputs(setup, profile, model);
  Layouts layouts;
  if (mode == FlowTrainMode::kMonolithic) {
    layouts.monolithic = models::flowtrain::best_monolithic_layout(in, setup.workers);
    if (!(layouts.monolithic.rate > 0)) {
      return Status::invalid_argument("--model " + setup.model + ": no uniform layout of " +
                                      std::to_string(setup.workers) + " workers fits the device's memory");
    }
  } else {
    auto split = models::flowtrain::allocate(in);
    if (!split.is_ok()) return split.status();
    layouts.split = *split;
  }
  return layouts;
}

}  // namespace

Status flowtrain_fits(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, FlowTrainMode mode) {
  CT_RETURN_IF_ERROR(validate(setup, profile));
  auto layouts = choose_layouts(setup, profile, mode, *models::flowtrain::vlm_spec(setup.model));
  return layouts.is_ok() ? Status::ok() : layouts.status();
}

StatusOr<FlowTrainRow> run_flowtrain(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                     FlowTrainMode mode) {
  CT_RETURN_IF_ERROR(validate(setup, profile));
  const auto wall_start = std::chrono::steady_clock::now();
  const models::flowtrain::VlmSpec model = *models::flowtrain::vlm_spec(setup.model);
  auto layouts = choose_layouts(setup, profile, mode, model);
  if (!layouts.is_ok()) return layouts.status();
  auto payload = run_isolated([&] { return run_in_child(setup, profile, mode, model, *layouts); });
  if (!payload.is_ok()) return payload.status();
  FlowTrainRow row = detail::row_from_json(nlohmann::json::parse(*payload));
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return row;
}

StatusOr<std::vector<FlowTrainRow>> run_flowtrain_modes(
    const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, const std::vector<FlowTrainMode>& modes,
    const std::vector<int>& workers, const std::function<void(const FlowTrainRow&, int, int)>& progress) {
  std::vector<FlowTrainRow> rows;
  const int total = static_cast<int>(modes.size() * workers.size());
  for (int n : workers) {
    FlowTrainSetup s = setup;
    s.workers = n;
    const size_t first = rows.size();
    for (FlowTrainMode m : modes) {
      auto row = run_flowtrain(s, profile, m);
      if (!row.is_ok()) return row.status();
      rows.push_back(std::move(*row));
      if (progress) progress(rows.back(), static_cast<int>(rows.size()), total);
    }
    const FlowTrainRow* mono = nullptr;
    for (size_t i = first; i < rows.size(); ++i) {
      if (rows[i].mode == "monolithic") mono = &rows[i];
    }
    if (mono != nullptr) {
      const double base = mono->samples_per_s;
      for (size_t i = first; i < rows.size(); ++i)
        rows[i].speedup = rows[i].samples_per_s / base;
    }
  }
  return rows;
}

}  // namespace clustertwin::sim::flowtrain
