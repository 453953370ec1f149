// The fuzz targets, one per input format a user hands the tool: each takes
// arbitrary bytes to that format's reader and checks what any input must end
// in, a value read or one error line with exit code 2 (a user's error). A
// crash, a hang, a sanitizer report or a failed check is a finding.
//
// `make fuzz` builds each as a libFuzzer executable (fuzz_main.cpp, clang,
// address and undefined-behaviour sanitizers) and runs it on its seed corpus
// (fuzz_corpora.h); `make test` replays every seed and every saved crasher
// (tests/fuzz/crashers/TARGET/) through the same functions
// (fuzz_replay_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace clustertwin::fuzz {

/// What a reader's refusal must be: exit code 2, a user's error (printed on
/// one line by the command line, whatever the message holds).
void check_user_error(const Status& status, const char* target);

int fuzz_trace(const uint8_t* data, size_t size);                // Chrome trace JSON (traces/FORMAT.md)
int fuzz_plan_json(const uint8_t* data, size_t size);            // a step plan (models/plan/README.md)
int fuzz_profile_yaml(const uint8_t* data, size_t size);         // a cluster profile (sim/platforms/README.md)
int fuzz_device_yaml(const uint8_t* data, size_t size);          // a device profile (sim/platforms/devices)
int fuzz_chakra_et(const uint8_t* data, size_t size);            // one rank's Chakra execution trace, to a plan
int fuzz_kernel_trace(const uint8_t* data, size_t size);         // a kernel-benchmark trace (traces/kernel_trace.h)
int fuzz_state_dump(const uint8_t* data, size_t size);           // a checkpoint's rank file (common/state_dump.h)
int fuzz_checkpoint_manifest(const uint8_t* data, size_t size);  // a checkpoint's manifest (real/core/checkpoint.h)

}  // namespace clustertwin::fuzz
