// JsonCursor's scanners of the scalar tokens: a string with its escapes
// (surrogate pairs of unicode escapes made one code point, in UTF-8), a number
// checked against RFC 8259's grammar, and the literals true, false and null.
#include <charconv>
#include <string>

#include "traces/json_cursor.h"
#include "traces/json_cursor_internal.h"

namespace clustertwin::traces {
namespace {

using detail::is_digit;
using detail::printable;

bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
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

}  // namespace

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

}  // namespace clustertwin::traces
