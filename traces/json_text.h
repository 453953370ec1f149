#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/json_number.h"
#include "traces/json_cursor.h"

// The hand-written JSON of the Chrome-trace format (traces/FORMAT.md): its
// streaming writer (trace_writer.cpp, and the trace summary and the Kineto
// import's config, which this layer writes without nlohmann-json, for the fuzz
// build has none) and its pull reader (json_cursor.h). A trace can be
// gigabytes, written and read event by event, so it is not built as a
// document. Everything else builds its JSON as nlohmann::ordered_json
// (common/json.h); tests/layering/json_writers.sh holds the line.

namespace clustertwin::traces {

// Numbers: clustertwin::append_json_number (common/json_number.h), the shortest round-trip decimal.

/// Appends `text` as a JSON string literal (quotes and escapes included).
void append_json_string(std::string* out, std::string_view text);
void append_json_int(std::string* out, int64_t value);

/// Copies the value that starts with token `first` (already read from
/// `cursor`) to `out` in compact JSON, keeping member order and numbers as
/// written. Returns false on a syntax error (see cursor.status()).
bool copy_json_value(JsonCursor& cursor, JsonCursor::Token first, std::string* out);

}  // namespace clustertwin::traces
