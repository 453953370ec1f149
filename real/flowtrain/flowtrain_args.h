#pragma once

// run flowtrain's arguments, checked before any rendezvous so that a bad
// value never waits for the other ranks: each error names the field of
// FlowTrainRunArgs (run_args.h), its value and what is allowed (exit 2); the
// command line says it with its flags (cli/flowtrain/run.cpp).

#include <c10/core/Device.h>

#include "common/status.h"
#include "real/flowtrain/run_args.h"
#include "real/flowtrain/tiny_vlm.h"

namespace clustertwin::real::flowtrain {

enum class Mode { kMonolithic, kDisaggSync, kFlowTrain };

/// The encoder workers of a split mode on `world` ranks: encoder_workers,
/// or a quarter of the ranks (at least one).
int encoder_count(const FlowTrainRunArgs& a, int world);

/// The tiny VLM of width W: the defaults' widths (d_vision, its MLP,
/// d_model, its MLP) times W, the same depth, heads and token counts, so that
/// a GPU has work enough (W = 8: a step of tens of ms on an H200).
TinyVlmOptions tiny_vlm_options(const FlowTrainRunArgs& a);

/// The mode, or InvalidArgument naming the first bad field.
StatusOr<Mode> check_args(const FlowTrainRunArgs& a, int world);

/// The fields that depend on the device chosen (choose_device):
/// pool_transfer cuda-ipc needs a GPU and a CUDA build.
Status check_device_args(const FlowTrainRunArgs& a, c10::Device device);

}  // namespace clustertwin::real::flowtrain
