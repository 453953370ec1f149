#pragma once

// run flowtrain's flags, checked before any rendezvous so that a bad flag
// never waits for the other ranks: each error names the flag, its value and
// what is allowed (exit 2).

#include <c10/core/Device.h>

#include "common/status.h"
#include "real/flowtrain/tiny_vlm.h"
#include "real/flowtrain/flowtrain_command.h"

namespace clustertwin::real::flowtrain {

enum class Mode { kMonolithic, kDisaggSync, kFlowTrain };

/// The encoder workers of a split mode on `world` ranks: --encoder-workers,
/// or a quarter of the ranks (at least one).
int encoder_count(const FlowTrainRunArgs& a, int world);

/// The tiny VLM of --width W: the defaults' widths (d_vision, its MLP,
/// d_model, its MLP) times W, the same depth, heads and token counts, so that
/// a GPU has work enough (W = 8: a step of tens of ms on an H200).
TinyVlmOptions tiny_vlm_options(const FlowTrainRunArgs& a);

/// The mode, or InvalidArgument naming the first bad flag.
StatusOr<Mode> check_args(const FlowTrainRunArgs& a, int world);

/// The flags that depend on the device chosen (choose_device):
/// --pool-transfer cuda-ipc needs a GPU and a CUDA build.
Status check_device_args(const FlowTrainRunArgs& a, c10::Device device);

}  // namespace clustertwin::real::flowtrain
