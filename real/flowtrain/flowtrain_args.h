#pragma once

// run flowtrain's arguments, checked before any rendezvous so that a bad
// value never waits for the other ranks: each error names the field of
// FlowTrainRunArgs (run_args.h), its value and what is allowed (exit 2); the
// command line says it with its flags (cli/flowtrain/run.cpp).

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "common/status.h"
#include "real/flowtrain/run_args.h"
#include "real/flowtrain/tiny_vlm.h"

namespace clustertwin::real::flowtrain {

enum class Mode { kMonolithic, kDisaggSync, kFlowTrain };

/// The encoder workers of a split mode on `world` ranks: encoder_workers,
/// or a quarter of the ranks (at least one).
int encoder_count(const FlowTrainRunArgs& a, int world);

/// `a` with what it leaves to the model preset filled in: dtype (fp32 for
/// tiny, bf16 for large) when empty, micro_batch_tokens (the model's
/// context) when 0. An unknown preset is left for check_args to name.
FlowTrainRunArgs with_model_defaults(const FlowTrainRunArgs& a);

/// The VLM of preset `a.model` (tiny_vlm_preset); for tiny with width W the
/// preset's widths (d_vision, its MLP, d_model, its MLP) times W, the same
/// depth, heads and token counts (W = 8: a step of tens of ms on an H200).
/// InvalidArgument naming the preset, or the width: W is in [1, 64], and 1
/// for large, whose widths are its own.
StatusOr<TinyVlmOptions> tiny_vlm_options(const FlowTrainRunArgs& a);

/// The dtype of the parameters and the compute: a.dtype, checked by check_args.
c10::ScalarType compute_dtype(const FlowTrainRunArgs& a);

/// The mode, or InvalidArgument naming the first bad field; `a` has its
/// model's defaults (with_model_defaults).
StatusOr<Mode> check_args(const FlowTrainRunArgs& a, int world);

/// The fields that depend on the device chosen (choose_device):
/// pool_transfer cuda-ipc needs a GPU and a CUDA build.
Status check_device_args(const FlowTrainRunArgs& a, c10::Device device);

}  // namespace clustertwin::real::flowtrain
