#pragma once

// Helpers of JsonCursor (internal to traces/) that both its files use:
// json_cursor.cpp (the grammar: which token may come next) and
// json_cursor_scan.cpp (the scanners of strings, numbers and literals).

#include <cstdio>
#include <string>

namespace clustertwin::traces::detail {

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A byte for a message: 'x' when printable, else 0x0A.
inline std::string printable(char c) {
  if (c >= 0x20 && c < 0x7F) return std::string("'") + c + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(c));
  return hex;
}

}  // namespace clustertwin::traces::detail
