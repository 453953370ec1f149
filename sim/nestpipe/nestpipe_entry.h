#pragma once

// NestPipe's entry in the twin registry (sim/core/twin.h): a job's field
// `variant`, and the job as the variant's step plan at the job's workers.

#include <string>

#include "sim/core/twin.h"
#include "sim/nestpipe/nestpipe_twin.h"

namespace clustertwin::sim::nestpipe {

/// A NestPipe job's settings: its variant (default nestpipe); the rest is
/// the paper's setting (NestPipeSetup's defaults).
struct NestPipeJobSettings : TwinSettings {
  std::string variant = "nestpipe";
  NestPipeSetup setup;
};

}  // namespace clustertwin::sim::nestpipe
