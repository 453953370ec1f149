#pragma once

#include <string>

namespace clustertwin {

/// The shortest decimal that reads back to exactly `value`: "0.05", "1e-08",
/// "3" (a whole value has no ".0"). The one number format of our hand-written
/// text: messages, CSV cells, gnuplot data and the streaming Chrome-trace
/// writer (traces/json_text.h). JSON documents are built with
/// nlohmann::ordered_json instead (common/json.h), which prints its own way.
/// `value` must be finite (a CT_CHECK).
std::string json_number(double value);

/// The same, appended to `out` without a temporary string: the trace writer
/// formats two numbers per event.
void append_json_number(std::string* out, double value);

}  // namespace clustertwin
