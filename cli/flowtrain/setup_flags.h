#pragma once

// The flags of `sim flowtrain` and `plan flowtrain` that set FlowTrain's
// setup (sim/flowtrain/flowtrain_twin.h): its library names a field in its
// messages ("pool_memory 1MB: ..."), the commands name the flag that set it
// ("--pool-memory 1MB: ...").

#include "cli/command.h"

namespace clustertwin::cli {

inline Status in_flowtrain_flag_words(const Status& status) {
  return in_flag_words(status, {{"model", "--model"},
                                {"workers", "--workers"},
                                {"encoder_workers", "--encoder-workers"},
                                {"global_batch", "--global-batch"},
                                {"micro_batch_tokens", "--micro-batch-tokens"},
                                {"pool_memory", "--pool-memory"},
                                {"steps", "--steps"},
                                {"gemm_efficiency", "--gemm-efficiency"},
                                {"attention_efficiency", "--attention-efficiency"},
                                {"tp_overlap", "--tp-overlap"},
                                {"mode", "--mode"},
                                {"device_profile", "--device-profile"}});
}

}  // namespace clustertwin::cli
