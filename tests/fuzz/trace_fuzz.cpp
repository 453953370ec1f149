// Fuzzes the JSON cursor, the trace reader and the validator with arbitrary
// bytes. Any input must end in either a valid trace or one error line with
// exit code 2: no crash, no hang, no sanitizer report.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.h"
#include "traces/json_cursor.h"
#include "traces/trace_reader.h"
#include "traces/validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using clustertwin::traces::JsonCursor;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  JsonCursor cursor(text, "fuzz.json");
  for (int guard = 0; guard < (1 << 22); ++guard) {
    const JsonCursor::Token t = cursor.next();
    if (t == JsonCursor::Token::kEnd || t == JsonCursor::Token::kError) break;
  }

  const clustertwin::Status status = clustertwin::traces::validate_trace_text(text, "fuzz.json", nullptr);
  if (!status.is_ok()) {
    CT_CHECK(status.exit_code() == 2) << "bad input must be a user error: " << status.message();
    CT_CHECK(status.message().find('\n') == std::string::npos) << "error must be one line: " << status.message();
  }
  return 0;
}
