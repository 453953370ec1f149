#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace clustertwin {

/// A user's value as shown in a one-line error message: in single quotes,
/// cut after 60 characters ("..."), with newlines as \n and other control
/// characters as \xNN so that the message stays on one line.
std::string quote_for_message(std::string_view text);

/// A message as printed on one line: newlines as \n and other control
/// characters as \xNN, whole (the command line's last guard: a message
/// built from a user's value unquoted stays one line).
std::string on_one_line(std::string_view message);

/// The items of a comma-separated list as a user types it ("128,256" ->
/// {"128", "256"}); empty items stay (",8" -> {"", "8"}) so that the caller's
/// check can name them. An empty text is one empty item.
std::vector<std::string> split_commas(std::string_view text);

/// Byte sizes as a user types them for `flag`: "1K:1G" (doubling) or
/// "4096,1M"; K/M/G (or KiB/MiB/GiB) are powers of 1024, B or nothing bytes.
/// InvalidArgument naming the flag, the text and the bad item.
StatusOr<std::vector<int64_t>> parse_sizes(const std::string& text, const std::string& flag);

/// One number through a printf format with a single conversion ("%.3f"):
/// for tables and CSV cells.
std::string format_number(const char* printf_format, double value);

/// A whole number with thousands separators, as tables print counts and
/// rates: 1536 -> "1,536", 401793.4 -> "401,793" (1e15 and beyond, or not
/// finite: "%.3g").
std::string with_thousands(double value);

/// A ratio as a table prints it, "1.55x"; "-" when there is none (<= 0: the
/// run had no baseline to compare with).
std::string ratio_or_dash(double ratio);

}  // namespace clustertwin
