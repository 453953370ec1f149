// JsonCursor's scanners of the scalar tokens: a string with its escapes
// (surrogate pairs of unicode escapes made one code point, in UTF-8), a number
// checked against RFC 8259's grammar, and the literals true, false and null.
#include <charconv>
#include <optional>
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

// The four hex digits of a \u escape at begin[at..at+4), within the string's `length` bytes.
bool read_hex4(const char* begin, size_t length, size_t at, uint32_t* out) {
  if (at + 4 > length) return false;
  uint32_t v = 0;
  for (size_t h = 0; h < 4; ++h) {
    const int d = hex_value(begin[at + h]);
    if (d < 0) return false;
    v = v * 16 + static_cast<uint32_t>(d);
  }
  *out = v;
  return true;
}

// The \u escape whose 'u' is at begin[*k], and the low surrogate's escape after it where it is a pair, as
// UTF-8 into `out`; *k left on its last byte. False when its four hex digits are not.
bool decode_unicode_escape(const char* begin, size_t length, size_t* k, std::string* out) {
  uint32_t code = 0;
  if (!read_hex4(begin, length, *k + 1, &code)) return false;
  *k += 4;
  if (code >= 0xD800 && code <= 0xDBFF) {
    uint32_t low = 0;
    if (*k + 2 < length && begin[*k + 1] == '\\' && begin[*k + 2] == 'u' && read_hex4(begin, length, *k + 3, &low) &&
        low >= 0xDC00 && low <= 0xDFFF) {
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      *k += 6;
    } else {
      code = 0xFFFD;  // a lone surrogate cannot be encoded; keep a visible replacement
    }
  } else if (code >= 0xDC00 && code <= 0xDFFF) {
    code = 0xFFFD;
  }
  append_utf8(out, code);
  return true;
}

// A bad escape: its byte from the string's first, and what is wrong.
struct BadEscape {
  size_t at;
  std::string what;
};

// The string's `length` bytes from `begin` with their escapes decoded, into `out`.
std::optional<BadEscape> unescape(const char* begin, size_t length, std::string* out) {
  out->clear();
  for (size_t k = 0; k < length; ++k) {
    const char c = begin[k];
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    const char e = begin[++k];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out->push_back(e);
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u':
        if (!decode_unicode_escape(begin, length, &k, out)) return BadEscape{k, "bad \\u escape"};
        break;
      default:
        return BadEscape{k, "bad escape: backslash followed by " + printable(e)};
    }
  }
  return std::nullopt;
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
    if (const auto bad = unescape(begin, length, &scratch_)) {
      return fail("not valid JSON at byte " + std::to_string(start_offset + 1 + bad->at) + ": " + bad->what);
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
