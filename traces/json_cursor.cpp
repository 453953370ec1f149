#include "traces/json_cursor.h"

#include <charconv>
#include <cstdio>
#include <cstring>

#include "common/file_io.h"
#include "common/text.h"

namespace clustertwin::traces {
namespace {

constexpr size_t kWindowBytes = 1 << 20;

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; sets *plain when there is
// neither a fraction nor an exponent.
bool valid_number(std::string_view s, bool* plain) {
  size_t i = 0;
  const size_t n = s.size();
  *plain = true;
  if (i < n && s[i] == '-') ++i;
  if (i >= n) return false;
  if (s[i] == '0') {
    ++i;
  } else if (s[i] >= '1' && s[i] <= '9') {
    while (i < n && is_digit(s[i]))
      ++i;
  } else {
    return false;
  }
  if (i < n && s[i] == '.') {
    *plain = false;
    ++i;
    if (i >= n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i]))
      ++i;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    *plain = false;
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    if (i >= n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i]))
      ++i;
  }
  return i == n;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string* out, uint32_t code) {
  if (code < 0x80) {
    out->push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code >> 6)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
}

std::string printable(char c) {
  if (c >= 0x20 && c < 0x7F) return std::string("'") + c + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(c));
  return hex;
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

JsonCursor::Token JsonCursor::next() {
  if (!status_.is_ok()) return Token::kError;
  char c = 0;
  if (done_) {
    if (peek_byte(&c)) {
      return fail("not valid JSON at byte " + std::to_string(offset()) + ": unexpected " + printable(c) +
                  " after the end of the document");
    }
    return status_.is_ok() ? Token::kEnd : Token::kError;
  }
  for (;;) {
    if (!peek_byte(&c)) {
      if (!status_.is_ok()) return Token::kError;
      if (stack_.empty()) return fail("not JSON: the input is empty");
      return fail(std::string("truncated: the input ends at byte ") + std::to_string(offset()) + " inside " +
                  (stack_.back() == '{' ? "an object" : "an array"));
    }
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
            if (stack_.empty())
              return fail("not JSON: unexpected " + printable(c) + " at byte " + std::to_string(offset()));
            return fail("not valid JSON at byte " + std::to_string(offset()) + ": unexpected " + printable(c));
        }
      case Expect::kNothing:
        return fail("internal: cursor used after the end");
    }
  }
}

JsonCursor::Token JsonCursor::scan_string(bool is_key) {
  // pos_ is on the opening quote; it stays there until the token is complete
  // so that a refill keeps the whole token in the window.
  size_t i = pos_ + 1;
  bool escaped = false;
  for (;;) {
    if (i >= end_) {
      const size_t rel = i - pos_;
      if (!fill()) {
        if (!status_.is_ok()) return Token::kError;
        return fail("truncated: the input ends at byte " + std::to_string(consumed_ + end_) + " inside a string");
      }
      i = pos_ + rel;
      continue;
    }
    const char c = buffer_[i];
    if (c == '"') break;
    if (c == '\\') {
      escaped = true;
      if (i + 1 >= end_) {
        const size_t rel = i - pos_;
        if (!fill()) {
          if (!status_.is_ok()) return Token::kError;
          return fail("truncated: the input ends at byte " + std::to_string(consumed_ + end_) + " inside a string");
        }
        i = pos_ + rel;
        continue;
      }
      i += 2;
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      return fail("not valid JSON at byte " + std::to_string(consumed_ + i) + ": control character " + printable(c) +
                  " inside a string");
    }
    ++i;
  }
  const char* begin = buffer_.data() + pos_ + 1;
  const size_t length = i - pos_ - 1;
  const uint64_t start_offset = consumed_ + pos_;
  pos_ = i + 1;
  if (!escaped) {
    text_ = std::string_view(begin, length);
  } else {
    scratch_.clear();
    for (size_t k = 0; k < length; ++k) {
      const char c = begin[k];
      if (c != '\\') {
        scratch_.push_back(c);
        continue;
      }
      const char e = begin[++k];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          scratch_.push_back(e);
          break;
        case 'b':
          scratch_.push_back('\b');
          break;
        case 'f':
          scratch_.push_back('\f');
          break;
        case 'n':
          scratch_.push_back('\n');
          break;
        case 'r':
          scratch_.push_back('\r');
          break;
        case 't':
          scratch_.push_back('\t');
          break;
        case 'u': {
          auto read_hex4 = [&](size_t at, uint32_t* out) {
            if (at + 4 > length) return false;
            uint32_t v = 0;
            for (size_t h = 0; h < 4; ++h) {
              const int d = hex_value(begin[at + h]);
              if (d < 0) return false;
              v = v * 16 + static_cast<uint32_t>(d);
            }
            *out = v;
            return true;
          };
          uint32_t code = 0;
          if (!read_hex4(k + 1, &code)) {
            return fail("not valid JSON at byte " + std::to_string(start_offset + 1 + k) + ": bad \\u escape");
          }
          k += 4;
          if (code >= 0xD800 && code <= 0xDBFF) {
            uint32_t low = 0;
            if (k + 2 < length && begin[k + 1] == '\\' && begin[k + 2] == 'u' && read_hex4(k + 3, &low) &&
                low >= 0xDC00 && low <= 0xDFFF) {
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
              k += 6;
            } else {
              code = 0xFFFD;  // a lone surrogate cannot be encoded; keep a visible replacement
            }
          } else if (code >= 0xDC00 && code <= 0xDFFF) {
            code = 0xFFFD;
          }
          append_utf8(&scratch_, code);
          break;
        }
        default:
          return fail("not valid JSON at byte " + std::to_string(start_offset + 1 + k) +
                      ": bad escape: backslash followed by " + printable(e));
      }
    }
    text_ = scratch_;
  }
  if (is_key) {
    expect_ = Expect::kColon;
    return Token::kKey;
  }
  return after_value(Token::kString);
}

JsonCursor::Token JsonCursor::scan_number() {
  size_t i = pos_;
  for (;;) {
    while (i < end_ && is_number_char(buffer_[i]))
      ++i;
    if (i < end_) break;
    const size_t rel = i - pos_;
    if (!fill()) {
      if (!status_.is_ok()) return Token::kError;
      i = pos_ + rel;
      break;
    }
    i = pos_ + rel;
  }
  const std::string_view raw(buffer_.data() + pos_, i - pos_);
  bool plain = false;
  if (!valid_number(raw, &plain)) {
    return fail("not valid JSON at byte " + std::to_string(offset()) + ": bad number '" + std::string(raw) + "'");
  }
  const char* first = raw.data();
  const char* last = raw.data() + raw.size();
  is_integer_ = false;
  if (plain) {
    auto [ptr, ec] = std::from_chars(first, last, integer_);
    is_integer_ = ec == std::errc() && ptr == last;
  }
  auto [ptr, ec] = std::from_chars(first, last, number_);
  if (ec == std::errc::result_out_of_range) {
    return fail("not accepted at byte " + std::to_string(offset()) + ": number '" + std::string(raw) +
                "' is out of the range of a double");
  }
  if (ec != std::errc() || ptr != last) {
    return fail("not valid JSON at byte " + std::to_string(offset()) + ": bad number '" + std::string(raw) + "'");
  }
  text_ = raw;
  pos_ = i;
  return after_value(Token::kNumber);
}

JsonCursor::Token JsonCursor::scan_literal(std::string_view word, Token token) {
  while (end_ - pos_ < word.size()) {
    if (!fill()) {
      if (!status_.is_ok()) return Token::kError;
      return fail("truncated: the input ends at byte " + std::to_string(consumed_ + end_) + " inside a literal");
    }
  }
  if (std::string_view(buffer_.data() + pos_, word.size()) != word) {
    if (stack_.empty())
      return fail("not JSON: unexpected " + printable(buffer_[pos_]) + " at byte " + std::to_string(offset()));
    return fail("not valid JSON at byte " + std::to_string(offset()) + ": unexpected " + printable(buffer_[pos_]));
  }
  pos_ += word.size();
  return after_value(token);
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
