// JsonCursor's window over the input and its grammar: which token may come
// where. The scalar tokens are scanned in json_cursor_scan.cpp.
#include "traces/json_cursor.h"

#include <cstring>

#include "common/file_io.h"
#include "common/text.h"
#include "traces/json_cursor_internal.h"

namespace clustertwin::traces {
namespace {

using detail::is_digit;
using detail::printable;

constexpr size_t kWindowBytes = 1 << 20;

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

JsonCursor::JsonCursor(InputFile* file, std::string name)
    : file_(file), name_(std::move(name)), buffer_(kWindowBytes, '\0') {}

JsonCursor::JsonCursor(std::string_view text, std::string name)
    : name_(std::move(name)), buffer_(text), end_(text.size()), eof_(true) {}

JsonCursor::~JsonCursor() = default;

const char* JsonCursor::describe(Token token) {
  switch (token) {
    case Token::kBeginObject:
      return "an object";
    case Token::kEndObject:
      return "the end of an object";
    case Token::kBeginArray:
      return "an array";
    case Token::kEndArray:
      return "the end of an array";
    case Token::kKey:
      return "a member name";
    case Token::kString:
      return "a string";
    case Token::kNumber:
      return "a number";
    case Token::kTrue:
      return "true";
    case Token::kFalse:
      return "false";
    case Token::kNull:
      return "null";
    case Token::kEnd:
      return "the end of the input";
    case Token::kError:
      return "an error";
  }
  return "?";
}

std::string JsonCursor::describe_value(Token token) const {
  std::string what = describe(token);
  if (token == Token::kString) what += " (" + quote_for_message(text_) + ")";
  if (token == Token::kNumber) what += " (" + std::string(text_) + ")";
  return what;
}

bool JsonCursor::fill() {
  if (eof_) return false;
  if (pos_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + pos_, end_ - pos_);
    consumed_ += pos_;
    end_ -= pos_;
    pos_ = 0;
  }
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // one token longer than the window
  const size_t got = file_->read(buffer_.data() + end_, buffer_.size() - end_);
  if (got == 0) {
    eof_ = true;
    if (!file_->status().is_ok()) status_ = file_->status();
    return false;
  }
  end_ += got;
  return true;
}

bool JsonCursor::peek_byte(char* c) {
  for (;;) {
    while (pos_ < end_ && is_space(buffer_[pos_]))
      ++pos_;
    if (pos_ < end_) {
      *c = buffer_[pos_];
      return true;
    }
    if (!fill()) return false;
  }
}

JsonCursor::Token JsonCursor::fail(const std::string& message) {
  if (status_.is_ok()) status_ = Status::invalid_argument(name_ + ": " + message);
  return Token::kError;
}

JsonCursor::Token JsonCursor::after_value(Token token) {
  if (stack_.empty()) {
    done_ = true;
    expect_ = Expect::kNothing;
  } else {
    expect_ = Expect::kCommaOrEnd;
  }
  return token;
}

JsonCursor::Token JsonCursor::after_document() {
  char c = 0;
  if (peek_byte(&c)) {
    return fail("not valid JSON at byte " + std::to_string(offset()) + ": unexpected " + printable(c) +
                " after the end of the document");
  }
  return status_.is_ok() ? Token::kEnd : Token::kError;
}

JsonCursor::Token JsonCursor::input_ended() {
  if (!status_.is_ok()) return Token::kError;
  if (stack_.empty()) return fail("not JSON: the input is empty");
  return fail(std::string("truncated: the input ends at byte ") + std::to_string(offset()) + " inside " +
              (stack_.back() == '{' ? "an object" : "an array"));
}

JsonCursor::Token JsonCursor::scan_value(char c) {
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= kMaxDepth) {
        return fail("not accepted at byte " + std::to_string(offset()) + ": nesting deeper than " +
                    std::to_string(kMaxDepth) + " levels");
      }
      ++pos_;
      stack_.push_back(c);
      expect_ = c == '{' ? Expect::kKeyOrEnd : Expect::kValueOrEnd;
      return c == '{' ? Token::kBeginObject : Token::kBeginArray;
    case '"':
      return scan_string(/*is_key=*/false);
    case 't':
      return scan_literal("true", Token::kTrue);
    case 'f':
      return scan_literal("false", Token::kFalse);
    case 'n':
      return scan_literal("null", Token::kNull);
    default:
      if (c == '-' || is_digit(c)) return scan_number();
      if (stack_.empty()) return fail("not JSON: unexpected " + printable(c) + " at byte " + std::to_string(offset()));
      return fail("not valid JSON at byte " + std::to_string(offset()) + ": unexpected " + printable(c));
  }
}

JsonCursor::Token JsonCursor::next() {
  if (!status_.is_ok()) return Token::kError;
  if (done_) return after_document();
  char c = 0;
  for (;;) {
    if (!peek_byte(&c)) return input_ended();
    switch (expect_) {
      case Expect::kColon:
        if (c != ':') {
          return fail("not valid JSON at byte " + std::to_string(offset()) +
                      ": expected ':' after a member name, got " + printable(c));
        }
        ++pos_;
        expect_ = Expect::kValue;
        continue;
      case Expect::kCommaOrEnd:
        if (c == ',') {
          ++pos_;
          expect_ = stack_.back() == '{' ? Expect::kKey : Expect::kValue;
          continue;
        }
        if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) {
          ++pos_;
          stack_.pop_back();
          return after_value(c == '}' ? Token::kEndObject : Token::kEndArray);
        }
        return fail("not valid JSON at byte " + std::to_string(offset()) + ": expected ',' or '" +
                    (stack_.back() == '{' ? "}" : "]") + "', got " + printable(c));
      case Expect::kKeyOrEnd:
        if (c == '}') {
          ++pos_;
          stack_.pop_back();
          return after_value(Token::kEndObject);
        }
        [[fallthrough]];
      case Expect::kKey:
        if (c != '"') {
          return fail("not valid JSON at byte " + std::to_string(offset()) +
                      ": expected a member name in quotes, got " + printable(c));
        }
        return scan_string(/*is_key=*/true);
      case Expect::kValueOrEnd:
        if (c == ']') {
          ++pos_;
          stack_.pop_back();
          return after_value(Token::kEndArray);
        }
        [[fallthrough]];
      case Expect::kValue:
        return scan_value(c);
      case Expect::kNothing:
        return fail("internal: cursor used after the end");
    }
  }
}

bool JsonCursor::skip_rest_of_value(Token first) {
  if (first == Token::kError || first == Token::kEnd) return false;
  if (first != Token::kBeginObject && first != Token::kBeginArray) return true;
  const size_t target = depth() - 1;
  for (;;) {
    const Token t = next();
    if (t == Token::kError || t == Token::kEnd) return false;
    if ((t == Token::kEndObject || t == Token::kEndArray) && depth() == target) return true;
  }
}

}  // namespace clustertwin::traces
