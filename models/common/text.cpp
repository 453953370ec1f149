#include "models/common/text.h"

#include <cmath>
#include <cstdio>

namespace clustertwin {

std::string quote_for_message(std::string_view text) {
  constexpr size_t kMaxShown = 60;
  std::string out = "'";
  for (char c : text.substr(0, kMaxShown)) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F) {
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(c));
      out += hex;
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.emplace_back(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

std::string format_number(const char* printf_format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, printf_format, value);
  return buffer;
}

std::string with_thousands(double value) {
  if (!std::isfinite(value) || std::abs(value) >= 1e15) return format_number("%.3g", value);
  const std::string digits = format_number("%.0f", std::abs(value));
  std::string out = value <= -0.5 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string ratio_or_dash(double ratio) {
  return ratio > 0 ? format_number("%.2f", ratio) + "x" : "-";
}

}  // namespace clustertwin
