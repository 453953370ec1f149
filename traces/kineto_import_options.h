#pragma once

// What the Kineto import (kineto_import.h) is given and reports: the types
// its command and its parts (kineto_import_internal.h) both use.

#include <cstdint>
#include <optional>

namespace clustertwin::traces {

/// How to import PyTorch profiler (Kineto) traces.
struct KinetoImportOptions {
  /// Overrides the rank taken from `distributedInfo.rank`; only with one input file.
  std::optional<int64_t> rank;
  /// Keeps CUDA runtime and driver API calls (`cuda_runtime`, `cuda_driver`) as host events; dropped by default.
  bool keep_runtime_calls = false;
};

/// What an import did, for the command's report.
struct KinetoImportStats {
  int64_t events_read = 0;     // trace events seen in the inputs
  int64_t events_written = 0;  // complete events in the output
  int64_t collectives = 0;     // events mapped to category `comm` with collective args
  int64_t dropped = 0;         // events of kinds we do not map (flows, instants, counters, ...)
  int world_size = 0;
};

}  // namespace clustertwin::traces
