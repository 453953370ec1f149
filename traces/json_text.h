#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "traces/json_cursor.h"

namespace clustertwin::traces {

/// Appends `text` as a JSON string literal (quotes and escapes included).
void append_json_string(std::string* out, std::string_view text);
/// Appends the shortest decimal form that reads back to exactly `value` (must be finite).
void append_json_number(std::string* out, double value);
/// The same as a string: "0.05", "1e-08" (for messages and hand-built JSON).
std::string json_number(double value);
void append_json_int(std::string* out, int64_t value);

/// Copies the value that starts with token `first` (already read from
/// `cursor`) to `out` in compact JSON, keeping member order and numbers as
/// written. Returns false on a syntax error (see cursor.status()).
bool copy_json_value(JsonCursor& cursor, JsonCursor::Token first, std::string* out);

}  // namespace clustertwin::traces
