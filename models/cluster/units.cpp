#include "models/cluster/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace clustertwin::cluster {
namespace {

struct Scale {
  std::string_view name;
  double factor;
};

// Prefixes of bytes and bits. Lower-case k is the SI spelling; upper-case K is
// so common in "KB" that rejecting it would only annoy. No milli: "5mB/s" is a typo.
constexpr std::array<Scale, 12> kBytePrefixes{{{"", 1},
                                               {"k", 1e3},
                                               {"K", 1e3},
                                               {"M", 1e6},
                                               {"G", 1e9},
                                               {"T", 1e12},
                                               {"P", 1e15},
                                               {"Ki", 0x1p10},
                                               {"Mi", 0x1p20},
                                               {"Gi", 0x1p30},
                                               {"Ti", 0x1p40},
                                               {"Pi", 0x1p50}}};

// Bandwidth units after the prefix: bits (divide by 8) or bytes.
constexpr std::array<Scale, 5> kBandwidthSuffixes{
    {{"bit/s", 1.0 / 8}, {"bps", 1.0 / 8}, {"b/s", 1.0 / 8}, {"B/s", 1}, {"Bps", 1}}};

constexpr std::array<Scale, 6> kTimeUnits{
    {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\u00b5s", 1e-6}, {"\u03bcs", 1e-6}, {"ns", 1e-9}}};

// FLOP-rate prefixes and units are matched in lower case: "TFLOPS", "Tflops"
// and "TFLOP/s" are all seen in datasheets, and milli-FLOPS make no sense.
constexpr std::array<Scale, 7> kFlopPrefixes{
    {{"", 1}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"p", 1e15}, {"e", 1e18}}};
constexpr std::array<std::string_view, 4> kFlopSuffixes{{"flops", "flop/s", "ops", "op/s"}};

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

template <size_t N>
std::optional<double> lookup(const std::array<Scale, N>& table, std::string_view name) {
  for (const Scale& scale : table) {
    if (scale.name == name) return scale.factor;
  }
  return std::nullopt;
}

bool strip_suffix(std::string_view& text, std::string_view suffix) {
  if (text.size() < suffix.size() || text.substr(text.size() - suffix.size()) != suffix) return false;
  text.remove_suffix(suffix.size());
  return true;
}

std::optional<double> bandwidth_factor(std::string_view unit) {
  for (const Scale& suffix : kBandwidthSuffixes) {
    std::string_view prefix = unit;
    if (!strip_suffix(prefix, suffix.name)) continue;
    if (auto scale = lookup(kBytePrefixes, prefix)) return *scale * suffix.factor;
  }
  return std::nullopt;
}

std::optional<double> size_factor(std::string_view unit) {
  std::string_view prefix = unit;
  if (!strip_suffix(prefix, "B")) return std::nullopt;
  return lookup(kBytePrefixes, prefix);
}

std::optional<double> flop_rate_factor(std::string_view unit) {
  std::string lower(unit);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view suffix : kFlopSuffixes) {
    std::string_view prefix = lower;
    if (!strip_suffix(prefix, suffix)) continue;
    if (auto scale = lookup(kFlopPrefixes, prefix)) return scale;
  }
  return std::nullopt;
}

std::optional<double> unit_factor(std::string_view unit, Quantity quantity) {
  switch (quantity) {
    case Quantity::kBandwidth:
      return bandwidth_factor(unit);
    case Quantity::kSize:
      return size_factor(unit);
    case Quantity::kTime:
      return lookup(kTimeUnits, unit);
    case Quantity::kFlopRate:
      return flop_rate_factor(unit);
  }
  return std::nullopt;
}

std::string_view allowed_units(Quantity quantity) {
  switch (quantity) {
    case Quantity::kBandwidth:
      return "bandwidth units: bps, b/s, bit/s (bits) or B/s, Bps (bytes), with a prefix k, M, G, T, P or Ki, Mi, "
             "Gi, Ti, Pi; a plain number is bytes/s";
    case Quantity::kSize:
      return "size units: B with a prefix k, M, G, T, P or Ki, Mi, Gi, Ti, Pi; a plain number is bytes";
    case Quantity::kTime:
      return "time units: s, ms, us, ns; a plain number is seconds";
    case Quantity::kFlopRate:
      return "FLOP-rate units: FLOPS, FLOP/s, OPS, OP/s with a prefix k, M, G, T, P, E; a plain number is FLOP/s";
  }
  return "";
}

}  // namespace

std::string_view quantity_name(Quantity quantity) {
  switch (quantity) {
    case Quantity::kBandwidth:
      return "bandwidth";
    case Quantity::kSize:
      return "size";
    case Quantity::kTime:
      return "time";
    case Quantity::kFlopRate:
      return "FLOP rate";
  }
  return "quantity";
}

StatusOr<double> parse_quantity(std::string_view text, Quantity quantity) {
  const std::string_view trimmed = trim(text);
  const std::string quoted = "'" + std::string(text) + "'";
  double number = 0;
  const char* begin = trimmed.data();
  const char* end = trimmed.data() + trimmed.size();
  const auto [rest, error] = std::from_chars(begin, end, number, std::chars_format::general);
  if (error == std::errc::result_out_of_range || (error == std::errc() && !std::isfinite(number))) {
    return Status::invalid_argument(quoted + " is not a finite number");
  }
  if (error != std::errc()) {
    return Status::invalid_argument(quoted + " is not a number (" + std::string(allowed_units(quantity)) + ")");
  }
  const std::string_view unit = trim(std::string_view(rest, static_cast<size_t>(end - rest)));
  double factor = 1;
  if (!unit.empty()) {
    const std::optional<double> known = unit_factor(unit, quantity);
    if (!known) {
      return Status::invalid_argument("unknown unit '" + std::string(unit) + "' in " + quoted + " (" +
                                      std::string(allowed_units(quantity)) + ")");
    }
    factor = *known;
  }
  const double value = number * factor;
  if (const std::string why = quantity_range_violation(value, quantity); !why.empty()) {
    return Status::invalid_argument(quoted + " " + why);
  }
  return value;
}

QuantityRange quantity_range(Quantity quantity) {
  switch (quantity) {
    case Quantity::kBandwidth:
      return {1, 1e18, "1 B/s .. 1 EB/s"};
    case Quantity::kSize:
      return {1, 1e18, "1 B .. 1 EB"};
    case Quantity::kTime:
      return {1e-12, 1e8, "1 ps .. 1e8 s"};
    case Quantity::kFlopRate:
      return {1, 1e18, "1 FLOP/s .. 1 EFLOP/s"};
  }
  return {};
}

std::string quantity_range_violation(double value, Quantity quantity) {
  const QuantityRange range = quantity_range(quantity);
  const double magnitude = std::fabs(value);
  if (value == 0 || (magnitude >= range.lowest && magnitude <= range.highest)) return "";
  return "is outside the " + std::string(quantity_name(quantity)) + " range " + std::string(range.text);
}

std::string format_quantity(double value, Quantity quantity) {
  std::string_view unit;
  switch (quantity) {
    case Quantity::kBandwidth:
      unit = "B/s";
      break;
    case Quantity::kSize:
      unit = "B";
      break;
    case Quantity::kTime:
      unit = "s";
      break;
    case Quantity::kFlopRate:
      unit = "FLOP/s";
      break;
  }
  static constexpr std::array<Scale, 5> kLarge{{{"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}}};
  static constexpr std::array<Scale, 3> kSmall{{{"m", 1e-3}, {"u", 1e-6}, {"n", 1e-9}}};
  std::string_view prefix;
  double scaled = value;
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e3) {
    for (const Scale& scale : kLarge) {
      if (magnitude >= scale.factor) {
        prefix = scale.name;
        scaled = value / scale.factor;
        break;
      }
    }
  } else if (quantity == Quantity::kTime && magnitude > 0 && magnitude < 1) {
    for (const Scale& scale : kSmall) {
      prefix = scale.name;
      scaled = value / scale.factor;
      if (magnitude >= scale.factor) break;
    }
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.4g %s%s", scaled, std::string(prefix).c_str(), std::string(unit).c_str());
  return buffer;
}

}  // namespace clustertwin::cluster
