#pragma once

// Hand-written JSON, on purpose: the Chrome-trace reader pulls a trace of
// gigabytes token by token in constant memory. Its writer is
// traces/trace_writer.cpp with traces/json_text.h; every other JSON document
// is an nlohmann::ordered_json (common/json.h, tests/layering/json_writers.sh).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace clustertwin {
class InputFile;
}

namespace clustertwin::traces {

/// A streaming pull tokenizer for JSON (RFC 8259).
///
/// It reads through a fixed-size window of the input, so a trace of a million
/// events is parsed in constant memory, and it checks the full grammar
/// (commas, colons, nesting, number syntax, escapes) as it goes. Object member
/// names come back as `kKey`, values as the other tokens. Errors stop the
/// cursor: `next()` then returns `kError` and `status()` says what and where
/// (byte offset).
///
///   {"a": [1, "x"]}  ->  kBeginObject kKey(a) kBeginArray kNumber kString kEndArray kEndObject kEnd
class JsonCursor {
 public:
  enum class Token {
    kBeginObject,
    kEndObject,
    kBeginArray,
    kEndArray,
    kKey,
    kString,
    kNumber,
    kTrue,
    kFalse,
    kNull,
    kEnd,  // the single top-level value is complete and only whitespace follows
    kError,
  };

  /// Reads from `file`, which must outlive the cursor. `name` prefixes errors.
  JsonCursor(InputFile* file, std::string name);
  /// Reads from an in-memory document (tests, fuzzing).
  JsonCursor(std::string_view text, std::string name);
  ~JsonCursor();
  JsonCursor(const JsonCursor&) = delete;
  JsonCursor& operator=(const JsonCursor&) = delete;

  Token next();

  /// The text of the last kKey or kString token, unescaped; valid until the next call.
  std::string_view text() const { return text_; }
  /// The value of the last kNumber token.
  double number() const { return number_; }
  /// True when the last kNumber had no fraction or exponent and fits in int64.
  bool is_integer() const { return is_integer_; }
  int64_t integer() const { return integer_; }
  /// The last kNumber exactly as written.
  std::string_view number_text() const { return text_; }

  /// After a token that opens a value (kBeginObject/kBeginArray), skips to its
  /// end; after a scalar, does nothing. Returns false on a syntax error.
  bool skip_rest_of_value(Token first);

  /// Nesting depth: 0 at top level, 1 inside the outermost container.
  size_t depth() const { return stack_.size(); }
  /// Byte offset in the (decompressed) input of the end of the last token.
  uint64_t offset() const { return consumed_ + pos_; }
  const Status& status() const { return status_; }
  /// The last token for a message: "a string ('abc')", "a number (1.5)",
  /// "an object", ... (valid until the next call, like text()).
  std::string describe_value(Token token) const;
  /// Names a token kind for messages ("a string", "an object", ...).
  static const char* describe(Token token);

  /// Deepest nesting accepted; deeper input is an error rather than a risk.
  static constexpr size_t kMaxDepth = 256;

 private:
  enum class Expect { kValue, kKeyOrEnd, kKey, kColon, kCommaOrEnd, kValueOrEnd, kNothing };

  bool fill();              // keeps [pos_, end_) and reads more; false at end of input
  bool peek_byte(char* c);  // skips whitespace; false at end of input
  Token fail(const std::string& message);
  Token after_document();    // the next token once the document is done: the end, or an error
  Token input_ended();       // the error of an input that ends where the document does not
  Token scan_value(char c);  // pos_ on the value's first byte `c`
  Token scan_string(bool is_key);
  Token scan_number();
  Token scan_literal(std::string_view word, Token token);
  Token after_value(Token token);

  InputFile* file_ = nullptr;
  std::string name_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t consumed_ = 0;  // bytes dropped from the front of the window so far
  bool eof_ = false;

  std::vector<char> stack_;  // '{' or '['
  Expect expect_ = Expect::kValue;
  bool done_ = false;

  std::string_view text_;
  std::string scratch_;
  double number_ = 0;
  int64_t integer_ = 0;
  bool is_integer_ = false;
  Status status_;
};

}  // namespace clustertwin::traces
