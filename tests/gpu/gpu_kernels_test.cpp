#include "real/gpu/gpu_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <string>

namespace clustertwin::real::gpu {
namespace {

// The tests that need a GPU. Each skips, saying why, where the process sees no
// CUDA device: every machine without a GPU, and every build without nvcc.
class GpuKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    devices_ = device_count(&why);
    if (devices_ == 0) GTEST_SKIP() << "no CUDA device visible: " << why;
  }

  int devices_ = 0;
};

TEST_F(GpuKernelsTest, SpinKernelTakesTheRequestedTime) {
  // 10 ms of busy-waiting on the GPU's global timer, timed by events on the
  // same stream: 10 ms plus a launch of a few microseconds, so within 5%
  // (0.5 ms) unless the timer or the events are wrong.
  constexpr double kRequestMs = 10.0;
  const StatusOr<double> ms = spin_kernel_ms(0, kRequestMs);
  ASSERT_TRUE(ms.is_ok()) << ms.status().to_string();
  std::cout << "spin kernel: asked " << kRequestMs << " ms, events measured " << *ms << " ms\n";
  EXPECT_NEAR(*ms, kRequestMs, 0.05 * kRequestMs);
}

TEST_F(GpuKernelsTest, CopyBandwidthIsPositive) {
  // 256 MiB, four times an H200's 60 MB L2, so the copies reach device memory.
  // An H200 copies at about 4.3 TB/s counting read plus write (the device
  // notes, KINDS.md); the test asks only for a positive figure, and prints it.
  constexpr size_t kBytes = size_t{256} << 20;
  const StatusOr<double> gbps = stream_bandwidth_gbps(0, kBytes);
  ASSERT_TRUE(gbps.is_ok()) << gbps.status().to_string();
  std::cout << "device-to-device copy of 256 MiB: " << *gbps << " GB/s (read + write)\n";
  EXPECT_GT(*gbps, 0.0);
}

TEST_F(GpuKernelsTest, RejectsADeviceThatDoesNotExist) {
  // Devices are numbered 0..devices_-1, so devices_ is the first that does not exist.
  const StatusOr<double> ms = spin_kernel_ms(devices_, 1.0);
  ASSERT_FALSE(ms.is_ok());
  EXPECT_EQ(ms.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ms.status().message(), "spin_kernel_ms: device " + std::to_string(devices_) +
                                       " does not exist: this process sees " + std::to_string(devices_) +
                                       " CUDA device(s), numbered from 0");

  const StatusOr<double> gbps = stream_bandwidth_gbps(-1, 1024);
  ASSERT_FALSE(gbps.is_ok());
  EXPECT_NE(gbps.status().message().find("stream_bandwidth_gbps: device -1 does not exist"), std::string::npos)
      << gbps.status().message();
}

TEST_F(GpuKernelsTest, RejectsASpinOutsideItsRange) {
  struct Case {
    double milliseconds;
    const char* shown;  // how the message writes it
  };
  const Case cases[] = {
      {0.0, "0"},
      {-1.0, "-1"},
      {60001.0, "60001"},
      {std::numeric_limits<double>::quiet_NaN(), "nan"},
  };
  for (const Case& c : cases) {
    const StatusOr<double> ms = spin_kernel_ms(0, c.milliseconds);
    ASSERT_FALSE(ms.is_ok()) << c.shown;
    EXPECT_EQ(ms.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(ms.status().message(), std::string("spin_kernel_ms: milliseconds ") + c.shown + " is not in (0, 60000]");
  }
}

TEST_F(GpuKernelsTest, RejectsCopiesOfNothingOrTooMuch) {
  const StatusOr<double> none = stream_bandwidth_gbps(0, 0);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().message(), "stream_bandwidth_gbps: bytes 0: give at least one byte to copy");

  // No GPU has 2^62 bytes (4 EiB) free, let alone twice that.
  const StatusOr<double> huge = stream_bandwidth_gbps(0, size_t{1} << 62);
  ASSERT_FALSE(huge.is_ok());
  EXPECT_EQ(huge.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("two buffers of that size do not fit"), std::string::npos)
      << huge.status().message();
}

// Runs where there is no device, which is most machines: every call must then
// fail with a reason, never crash or pretend.
TEST(GpuKernelsWithoutDeviceTest, EveryCallSaysWhy) {
  std::string why;
  if (device_count(&why) > 0) GTEST_SKIP() << "a CUDA device is visible: GpuKernelsTest covers this machine";
  EXPECT_FALSE(why.empty());
  std::cout << "device_count() is 0: " << why << "\n";

  const StatusOr<double> ms = spin_kernel_ms(0, 10.0);
  ASSERT_FALSE(ms.is_ok());
  EXPECT_NE(ms.status().message().find("spin_kernel_ms"), std::string::npos) << ms.status().message();

  const StatusOr<double> gbps = stream_bandwidth_gbps(0, 1024);
  ASSERT_FALSE(gbps.is_ok());
  EXPECT_NE(gbps.status().message().find("stream_bandwidth_gbps"), std::string::npos) << gbps.status().message();
}

}  // namespace
}  // namespace clustertwin::real::gpu
