#include "common/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace clustertwin {

namespace {

// `c` as a message shows it: itself when printable, else \n or \xNN.
void append_shown(char c, std::string* out) {
  if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F) {
    out->push_back(c);
  } else if (c == '\n') {
    *out += "\\n";
  } else {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(c));
    *out += hex;
  }
}

}  // namespace

std::string quote_for_message(std::string_view text) {
  constexpr size_t kMaxShown = 60;
  std::string out = "'";
  for (char c : text.substr(0, kMaxShown))
    append_shown(c, &out);
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

std::string on_one_line(std::string_view message) {
  std::string out;
  for (char c : message)
    append_shown(c, &out);
  return out;
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

namespace clustertwin {
namespace {

StatusOr<int64_t> parse_size(const std::string& text, const std::string& whole, const std::string& flag) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || value < 0) {
    return Status::invalid_argument(flag + " '" + whole + "': '" + text +
                                    "' is not a size (examples: 4096, 64K, 1M, 1G)");
  }
  const std::string suffix(ptr, end);
  int64_t scale = 1;
  if (suffix == "K" || suffix == "KiB") {
    scale = int64_t{1} << 10;
  } else if (suffix == "M" || suffix == "MiB") {
    scale = int64_t{1} << 20;
  } else if (suffix == "G" || suffix == "GiB") {
    scale = int64_t{1} << 30;
  } else if (!suffix.empty() && suffix != "B") {
    return Status::invalid_argument(flag + " '" + whole + "': unknown unit '" + suffix +
                                    "' (allowed: K, M, G, powers of 1024)");
  }
  return value * scale;
}

}  // namespace

StatusOr<std::vector<int64_t>> parse_sizes(const std::string& text, const std::string& flag) {
  std::vector<int64_t> sizes;
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    auto lo = parse_size(text.substr(0, colon), text, flag);
    if (!lo.is_ok()) return lo.status();
    auto hi = parse_size(text.substr(colon + 1), text, flag);
    if (!hi.is_ok()) return hi.status();
    if (*lo < 1 || *hi < *lo) {
      return Status::invalid_argument(flag + " '" + text + "': the range must go from at least 1 byte up");
    }
    for (int64_t s = *lo; s <= *hi; s *= 2)
      sizes.push_back(s);
    return sizes;
  }
  for (const std::string& item : split_commas(text)) {
    auto s = parse_size(item, text, flag);
    if (!s.is_ok()) return s.status();
    sizes.push_back(*s);
  }
  return sizes;
}

}  // namespace clustertwin
