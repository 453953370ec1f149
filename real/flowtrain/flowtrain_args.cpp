#include "real/flowtrain/flowtrain_args.h"

#include <algorithm>
#include <cmath>

#include "common/json_number.h"
#include "real/core/checkpointing.h"
#include "real/flowtrain/pool_transfer.h"
#include "real/flowtrain/tiny_vlm.h"

namespace clustertwin::real::flowtrain {
namespace {

bool one_of(const std::string& word, std::initializer_list<const char*> allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return word == a; });
}

}  // namespace

int encoder_count(const FlowTrainRunArgs& a, int world) {
  return a.encoder_workers > 0 ? a.encoder_workers : std::max(1, world / 4);
}

FlowTrainRunArgs with_model_defaults(const FlowTrainRunArgs& a) {
  FlowTrainRunArgs out = a;
  auto preset = tiny_vlm_preset(a.model);
  if (!preset.is_ok()) return out;
  if (out.dtype.empty()) out.dtype = a.model == "large" ? "bf16" : "fp32";
  if (out.micro_batch_tokens == 0) out.micro_batch_tokens = preset->context;
  return out;
}

StatusOr<TinyVlmOptions> tiny_vlm_options(const FlowTrainRunArgs& a) {
  auto o = tiny_vlm_preset(a.model);
  if (!o.is_ok()) return o.status();
  if (a.width < 1 || a.width > 64) {
    return Status::invalid_argument("width " + std::to_string(a.width) + ": must be in [1, 64]");
  }
  if (a.width != 1 && a.model != "tiny") {
    return Status::invalid_argument("width " + std::to_string(a.width) + " with model " + a.model +
                                    ": the preset sets its own widths (width scales the tiny model only)");
  }
  o->d_vision *= a.width;
  o->d_vision_ff *= a.width;
  o->d_model *= a.width;
  o->d_ff *= a.width;
  return o;
}

c10::ScalarType compute_dtype(const FlowTrainRunArgs& a) {
  return a.dtype == "bf16" ? c10::ScalarType::BFloat16 : c10::ScalarType::Float;
}

StatusOr<Mode> check_args(const FlowTrainRunArgs& a, int world) {
  Mode mode = Mode::kFlowTrain;
  if (a.mode == "monolithic") {
    mode = Mode::kMonolithic;
  } else if (a.mode == "disagg-sync") {
    mode = Mode::kDisaggSync;
  } else if (a.mode != "flowtrain") {
    return Status::invalid_argument("mode '" + a.mode + "': unknown (allowed: monolithic, disagg-sync, flowtrain)");
  }
  if (a.steps < 1) return Status::invalid_argument("steps " + std::to_string(a.steps) + ": must be at least 1");
  if (a.global_batch < 1) {
    return Status::invalid_argument("global_batch " + std::to_string(a.global_batch) + ": must be >= 1");
  }
  const auto o = tiny_vlm_options(a);
  if (!o.is_ok()) return o.status();
  if (!one_of(a.dtype, {"fp32", "bf16"})) {
    return Status::invalid_argument("dtype '" + a.dtype + "': unknown (allowed: fp32, bf16)");
  }
  if (a.micro_batch_tokens < o->context) {
    return Status::invalid_argument("micro_batch_tokens " + std::to_string(a.micro_batch_tokens) +
                                    ": must hold the longest sample (" + std::to_string(o->context) + " tokens)");
  }
  if (a.pool_slots < 1) {
    return Status::invalid_argument("pool_slots " + std::to_string(a.pool_slots) +
                                    ": smaller than one sample (a slot holds one sample's embeddings)");
  }
  if (!(a.lr > 0) || !std::isfinite(a.lr)) return Status::invalid_argument("lr " + json_number(a.lr) + ": must be > 0");
  if (a.threads < 1) return Status::invalid_argument("threads " + std::to_string(a.threads) + ": must be >= 1");
  if (!(a.timeout_s > 0)) return Status::invalid_argument("timeout_s " + json_number(a.timeout_s) + ": must be > 0");
  if (!one_of(a.device, {"cpu", "cuda", "auto"})) {
    return Status::invalid_argument("device '" + a.device + "': unknown device (allowed: cpu, cuda, auto)");
  }
  if (!one_of(a.backend, {"auto", "gloo", "nccl"})) {
    return Status::invalid_argument("backend '" + a.backend + "': unknown backend (allowed: auto, gloo, nccl)");
  }
  if (!one_of(a.pool_transfer, {"auto", "host", "cuda-ipc"})) {
    return Status::invalid_argument("pool_transfer '" + a.pool_transfer + "': unknown (allowed: auto, host, cuda-ipc)");
  }
  if (mode != Mode::kMonolithic) {
    const int e = encoder_count(a, world);
    if (a.encoder_workers < 0 || e >= world) {
      return Status::invalid_argument("encoder_workers " + std::to_string(a.encoder_workers) + " of " +
                                      std::to_string(world) + " ranks: each side needs at least one worker (1.." +
                                      std::to_string(world - 1) + "; launch --nproc 2 or more)");
    }
  }
  CT_RETURN_IF_ERROR(check_checkpoint_flags({a.checkpoint_dir, a.checkpoint_every, a.resume}));
  return mode;
}

Status check_device_args(const FlowTrainRunArgs& a, c10::Device device) {
  if (a.pool_transfer != "cuda-ipc") return Status::ok();
  if (!device.is_cuda()) {
    return Status::invalid_argument("pool_transfer cuda-ipc: the tensors are on the CPU (device " + a.device +
                                    "); CUDA IPC hands GPU memory between processes (use host or auto)");
  }
  if (!cuda_ipc_built()) {
    return Status::invalid_argument(
        "pool_transfer cuda-ipc: this build has no CUDA IPC path (configure with -DCT_CUDA=ON against a "
        "CUDA-enabled libtorch)");
  }
  return Status::ok();
}

}  // namespace clustertwin::real::flowtrain
