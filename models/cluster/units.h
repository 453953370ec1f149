#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace clustertwin::cluster {

/// What a quantity in a cluster profile measures. Each is stored in SI base units.
enum class Quantity {
  kBandwidth,  // bytes/s
  kSize,       // bytes
  kTime,       // seconds
  kFlopRate,   // FLOP/s (or OP/s for integer types)
};

/// "bandwidth", "size", "time", "FLOP rate": for messages.
std::string_view quantity_name(Quantity quantity);

/// Parses a number with an optional unit into SI base units. A plain number is
/// taken as already in base units ("50e9" bandwidth = 50 GB/s). Spaces between
/// number and unit are allowed.
///
///   bandwidth  b = bits, B = bytes: "400Gbps", "400Gb/s", "400Gbit/s", "50GB/s", "50GBps", "12GiB/s"
///   size       "80GB", "80GiB", "512MiB", "1TB"
///   time       "1s", "1.5 ms", "2us", "2µs", "500ns"
///   FLOP rate  "989TFLOPS", "67 TFLOP/s", "1.2PFLOPS", "1979TOPS" (case-insensitive)
///
/// Decimal prefixes k (or K), M, G, T, P are powers of 1000; binary prefixes
/// Ki, Mi, Gi, Ti, Pi are powers of 1024. On failure the message names the
/// text and the units allowed: "unknown unit 'Gbs' in '400Gbs' (bandwidth units: ...)".
/// A value other than zero must lie within the quantity's physical range
/// (quantity_range), whatever its sign: "1e308GB/s" names the range rather
/// than ending in a simulation that cannot finish. Signs are kept; the caller
/// checks them.
StatusOr<double> parse_quantity(std::string_view text, Quantity quantity);

/// The magnitudes a nonzero quantity may take, in SI base units: far beyond
/// any machine at either end, so a unit slip is refused where it is read.
///   bandwidth  1 B/s .. 1 EB/s      size       1 B .. 1 EB
///   time       1 ps .. 1e8 s (3 years)   FLOP rate  1 FLOP/s .. 1 EFLOP/s
struct QuantityRange {
  double lowest = 0;
  double highest = 0;
  std::string_view text;  // "1 B/s .. 1 EB/s"
};
QuantityRange quantity_range(Quantity quantity);

/// "" when `value` is zero or within quantity_range, else "is outside the
/// time range 1 ps .. 1e8 s" (for messages).
std::string quantity_range_violation(double value, Quantity quantity);

/// A short human form with a decimal prefix, for tables and messages:
/// "50 GB/s" (bandwidth always in bytes), "80 GB", "2 us", "989 TFLOP/s".
std::string format_quantity(double value, Quantity quantity);

}  // namespace clustertwin::cluster
