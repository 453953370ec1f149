#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "traces/event.h"

namespace clustertwin::traces {

/// What a valid trace holds, for the validator's one-line report.
struct ValidationStats {
  int64_t events = 0;  // complete events
  int64_t ranks_seen = 0;
  double span_us = 0;  // last end minus first start
  Metadata metadata;
};

/// Checks a trace file against traces/FORMAT.md, streaming.
///
/// Beyond what TraceReader checks per event (fields, types, categories,
/// negative times), it requires the metadata object, every pid to be a rank
/// below `world_size`, every tid to name a stream when the metadata lists
/// streams, non-empty names and finite end times. Returns the first problem
/// as InvalidArgument naming the file, the event index and the field.
Status validate_trace(const std::string& path, ValidationStats* stats);

/// The same, for an in-memory document (tests and the fuzzer).
Status validate_trace_text(std::string_view text, const std::string& name, ValidationStats* stats);

}  // namespace clustertwin::traces
