#pragma once

// The flags of `sim nestpipe` and `plan nestpipe` that set NestPipe's setup
// (sim/nestpipe/nestpipe_twin.h NestPipeSetup): its library names a field in
// its messages ("micro_batches 3: must divide the batch of 512"), the
// commands name the flag that set it ("--micro-batches 3: ...").

#include "cli/command.h"

namespace clustertwin::cli {

inline Status in_nestpipe_flag_words(const Status& status) {
  return in_flag_words(status, {{"model", "--model"},
                                {"batch_per_worker", "--batch"},
                                {"micro_batches", "--micro-batches"},
                                {"zipf_exponent", "--zipf"},
                                {"batch_overlap", "--overlap"},
                                {"samples_per_user", "--samples-per-user"},
                                {"user_shared_fraction", "--user-shared"},
                                {"replica_sync_every", "--sync-every"},
                                {"sharding_group", "--sharding-group"},
                                {"variants", "--variant"},
                                {"workers", "--workers"},
                                {"calibration", "--calibration"}});
}

}  // namespace clustertwin::cli
