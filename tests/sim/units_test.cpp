#include "models/cluster/units.h"

#include <gtest/gtest.h>

#include <string>

namespace clustertwin::sim {
namespace {

struct Case {
  std::string text;
  cluster::Quantity quantity;
  double expected;  // SI base units
};

class ParseQuantityTest : public ::testing::TestWithParam<Case> {};

TEST_P(ParseQuantityTest, ConvertsToBaseUnits) {
  const Case& c = GetParam();
  StatusOr<double> value = cluster::parse_quantity(c.text, c.quantity);
  ASSERT_TRUE(value.is_ok()) << c.text << ": " << value.status().message();
  EXPECT_DOUBLE_EQ(*value, c.expected) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Bandwidth, ParseQuantityTest,
    ::testing::Values(Case{"400Gbps", cluster::Quantity::kBandwidth, 50e9},    // 400 Gb/s = 400e9 / 8 = 50e9 B/s
                      Case{"400Gb/s", cluster::Quantity::kBandwidth, 50e9},    // the same, written with a slash
                      Case{"400Gbit/s", cluster::Quantity::kBandwidth, 50e9},  // the same, written out
                      Case{"25Gb/s", cluster::Quantity::kBandwidth, 3.125e9},  // 25e9 / 8 = 3.125e9 B/s
                      Case{"50GB/s", cluster::Quantity::kBandwidth, 50e9},     // B = bytes: 50e9 B/s
                      Case{"50GBps", cluster::Quantity::kBandwidth, 50e9},     // Bps = bytes per second
                      Case{"900 GB/s", cluster::Quantity::kBandwidth, 900e9},  // space between number and unit
                      Case{"12GiB/s", cluster::Quantity::kBandwidth, 12.0 * 1024 * 1024 * 1024},  // 12 * 2^30
                      Case{"100kB/s", cluster::Quantity::kBandwidth, 100e3},                      // k = 1e3
                      Case{"100KB/s", cluster::Quantity::kBandwidth, 100e3},                      // K = 1e3 as well
                      Case{"1.6TB/s", cluster::Quantity::kBandwidth, 1.6e12},                     // T = 1e12
                      Case{"8bps", cluster::Quantity::kBandwidth, 1},                             // 8 bits/s = 1 B/s
                      Case{"50e9", cluster::Quantity::kBandwidth, 50e9},  // a plain number is bytes/s
                      Case{" 7 ", cluster::Quantity::kBandwidth, 7},      // surrounding spaces are ignored
                      Case{"-5", cluster::Quantity::kBandwidth, -5}));    // the sign is kept: ranges are the caller's

INSTANTIATE_TEST_SUITE_P(Size, ParseQuantityTest,
                         ::testing::Values(Case{"80GB", cluster::Quantity::kSize, 80e9},  // 80 * 1e9
                                           Case{"80GiB", cluster::Quantity::kSize,
                                                80.0 * 1024 * 1024 * 1024},                                // 80 * 2^30
                                           Case{"512MiB", cluster::Quantity::kSize, 512.0 * 1024 * 1024},  // 512 * 2^20
                                           Case{"1 TB", cluster::Quantity::kSize, 1e12},                   // T = 1e12
                                           Case{"4096", cluster::Quantity::kSize, 4096}));                 // bytes

INSTANTIATE_TEST_SUITE_P(Time, ParseQuantityTest,
                         ::testing::Values(Case{"2us", cluster::Quantity::kTime, 2e-6},       // u = micro
                                           Case{"2\u00b5s", cluster::Quantity::kTime, 2e-6},  // µ (micro sign) = micro
                                           Case{"1.5 ms", cluster::Quantity::kTime, 1.5e-3},  // m = milli
                                           Case{"500ns", cluster::Quantity::kTime, 500e-9},   // n = nano
                                           Case{"1s", cluster::Quantity::kTime, 1},           // seconds
                                           Case{"0.25", cluster::Quantity::kTime, 0.25}));  // a plain number is seconds

INSTANTIATE_TEST_SUITE_P(
    FlopRate, ParseQuantityTest,
    ::testing::Values(Case{"989TFLOPS", cluster::Quantity::kFlopRate, 989e12},     // T = 1e12
                      Case{"67 TFLOP/s", cluster::Quantity::kFlopRate, 67e12},     // FLOP/s = FLOPS
                      Case{"1.2PFLOPS", cluster::Quantity::kFlopRate, 1.2e15},     // P = 1e15
                      Case{"25GFLOPS", cluster::Quantity::kFlopRate, 25e9},        // G = 1e9
                      Case{"19.5 tflops", cluster::Quantity::kFlopRate, 19.5e12},  // case-insensitive
                      Case{"1979TOPS", cluster::Quantity::kFlopRate, 1979e12},     // OPS for integer types
                      Case{"1e15", cluster::Quantity::kFlopRate, 1e15}));          // a plain number

struct BadCase {
  std::string text;
  cluster::Quantity quantity;
  std::string message;
};

class ParseQuantityErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseQuantityErrorTest, NamesTheValueAndTheUnitsAllowed) {
  const BadCase& c = GetParam();
  StatusOr<double> value = cluster::parse_quantity(c.text, c.quantity);
  ASSERT_FALSE(value.is_ok()) << c.text;
  EXPECT_EQ(value.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(value.status().message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    All, ParseQuantityErrorTest,
    ::testing::Values(
        BadCase{"400Gbs", cluster::Quantity::kBandwidth,
                "unknown unit 'Gbs' in '400Gbs' (bandwidth units: bps, b/s, bit/s (bits) or B/s, Bps (bytes), with a "
                "prefix k, M, G, T, P or Ki, Mi, Gi, Ti, Pi; a plain number is bytes/s)"},
        // A size in bits is almost surely a typo for bytes.
        BadCase{"80Gb", cluster::Quantity::kSize,
                "unknown unit 'Gb' in '80Gb' (size units: B with a prefix k, M, G, T, P or Ki, Mi, Gi, Ti, Pi; a "
                "plain number is bytes)"},
        // Milli-bytes per second: a typo for M.
        BadCase{"5mB/s", cluster::Quantity::kBandwidth,
                "unknown unit 'mB/s' in '5mB/s' (bandwidth units: bps, b/s, bit/s (bits) or B/s, Bps (bytes), with a "
                "prefix k, M, G, T, P or Ki, Mi, Gi, Ti, Pi; a plain number is bytes/s)"},
        BadCase{"3 min", cluster::Quantity::kTime,
                "unknown unit 'min' in '3 min' (time units: s, ms, us, ns; a plain number is seconds)"},
        BadCase{"10GB/s", cluster::Quantity::kFlopRate,
                "unknown unit 'GB/s' in '10GB/s' (FLOP-rate units: FLOPS, FLOP/s, OPS, OP/s with a prefix k, M, G, T, "
                "P, E; a plain number is FLOP/s)"},
        BadCase{"fast", cluster::Quantity::kTime,
                "'fast' is not a number (time units: s, ms, us, ns; a plain number is seconds)"},
        BadCase{"", cluster::Quantity::kSize,
                "'' is not a number (size units: B with a prefix k, M, G, T, P or Ki, Mi, Gi, Ti, Pi; a plain number "
                "is bytes)"},
        BadCase{"inf", cluster::Quantity::kTime, "'inf' is not a finite number"},
        BadCase{"1e400", cluster::Quantity::kSize, "'1e400' is not a finite number"},
        // Finite, but beyond any machine at either end: refused where read, not in the simulation.
        BadCase{"1e308GB/s", cluster::Quantity::kBandwidth,
                "'1e308GB/s' is outside the bandwidth range 1 B/s .. 1 EB/s"},
        BadCase{"1e-300", cluster::Quantity::kBandwidth, "'1e-300' is outside the bandwidth range 1 B/s .. 1 EB/s"},
        BadCase{"-1e20", cluster::Quantity::kSize, "'-1e20' is outside the size range 1 B .. 1 EB"},
        BadCase{"1e-300s", cluster::Quantity::kTime, "'1e-300s' is outside the time range 1 ps .. 1e8 s"},
        BadCase{"1e9", cluster::Quantity::kTime, "'1e9' is outside the time range 1 ps .. 1e8 s"},
        BadCase{"1e308TFLOPS", cluster::Quantity::kFlopRate,
                "'1e308TFLOPS' is outside the FLOP rate range 1 FLOP/s .. 1 EFLOP/s"}));

TEST(QuantityRangeTest, ZeroAndTheEndsAreInside) {
  EXPECT_TRUE(cluster::parse_quantity("0", cluster::Quantity::kBandwidth).is_ok());
  EXPECT_TRUE(cluster::parse_quantity("1e18", cluster::Quantity::kBandwidth).is_ok());  // calibrate's "latency only"
  EXPECT_TRUE(cluster::parse_quantity("1ns", cluster::Quantity::kTime).is_ok());
  EXPECT_TRUE(cluster::parse_quantity("1e8", cluster::Quantity::kTime).is_ok());
  EXPECT_EQ(cluster::quantity_range_violation(-5, cluster::Quantity::kBandwidth), "");  // the sign is the caller's
}

TEST(FormatQuantityTest, PicksADecimalPrefix) {
  EXPECT_EQ(cluster::format_quantity(50e9, cluster::Quantity::kBandwidth), "50 GB/s");
  EXPECT_EQ(cluster::format_quantity(80e9, cluster::Quantity::kSize), "80 GB");
  EXPECT_EQ(cluster::format_quantity(2e-6, cluster::Quantity::kTime), "2 us");
  EXPECT_EQ(cluster::format_quantity(1.5e-3, cluster::Quantity::kTime), "1.5 ms");
  EXPECT_EQ(cluster::format_quantity(989.5e12, cluster::Quantity::kFlopRate), "989.5 TFLOP/s");
  EXPECT_EQ(cluster::format_quantity(0, cluster::Quantity::kBandwidth), "0 B/s");
  EXPECT_EQ(cluster::format_quantity(3, cluster::Quantity::kTime), "3 s");
}

TEST(FormatQuantityTest, ParsesBackToTheSameValue) {
  for (double value : {50e9, 3.125e9, 1.6e12, 12e3}) {
    StatusOr<double> parsed = cluster::parse_quantity(cluster::format_quantity(value, cluster::Quantity::kBandwidth),
                                                      cluster::Quantity::kBandwidth);
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    EXPECT_DOUBLE_EQ(*parsed, value);
  }
}

}  // namespace
}  // namespace clustertwin::sim
