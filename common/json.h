#pragma once

// JSON documents: results, rows, reports, configs and sweep points are built
// and read as nlohmann::ordered_json (members in the order they were set), and
// read from files and printed through the two functions below. The only JSON
// written or read by hand is the Chrome-trace format's streaming writer and
// reader (traces/json_text.h, traces/json_cursor.h): traces can be gigabytes
// and go event by event. tests/layering/json_writers.sh keeps it that way.

#include <nlohmann/json.hpp>
#include <string>

#include "common/json_number.h"
#include "common/status.h"

namespace clustertwin {

/// Parses `text` as one JSON document. A syntax error is InvalidArgument with
/// one line naming `name` and nlohmann's line and column: "NAME: not valid
/// JSON at line 2, column 3: syntax error while parsing value - invalid literal; last read: 'x'".
StatusOr<nlohmann::ordered_json> parse_json(const std::string& text, const std::string& name);

/// Reads and parses the file at `path` (gzip or plain, common/file_io.h).
/// NotFound or IoError when it cannot be read, InvalidArgument when it is not
/// JSON; every message is one line naming the file.
StatusOr<nlohmann::ordered_json> read_json_file(const std::string& path);

/// `doc` as text with a trailing newline: compact (indent -1, the default) or
/// indented by `indent` spaces. nlohmann's number format: shortest round-trip
/// decimal, a whole double as "1.0", an integer type as "1".
std::string json_document(const nlohmann::ordered_json& doc, int indent = -1);

}  // namespace clustertwin
