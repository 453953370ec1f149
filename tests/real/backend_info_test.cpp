// real/core/backend_info.h: what the linked libtorch can do, and the line the
// command prints about it.

#include "real/core/backend_info.h"

#include <gtest/gtest.h>

namespace clustertwin::real {
namespace {

TEST(BackendInfoTest, DescribeNamesEachCapability) {
  BackendInfo cpu;
  cpu.torch_version = "1.13.0";
  cpu.gloo = true;
  EXPECT_EQ(describe(cpu), "libtorch 1.13.0, c10d gloo yes, nccl no, cuda no");
  BackendInfo gpu;
  gpu.torch_version = "2.5.1";
  gpu.gloo = true;
  gpu.nccl = true;
  gpu.cuda_built = true;
  gpu.cuda_devices = 8;
  EXPECT_EQ(describe(gpu), "libtorch 2.5.1, c10d gloo yes, nccl yes, cuda yes (8 device(s) visible)");
}

TEST(BackendInfoTest, TheLinkedLibtorchIsDescribedConsistently) {
  const BackendInfo info = backend_info();
  EXPECT_FALSE(info.torch_version.empty());
  EXPECT_GE(info.cuda_devices, 0);
  if (!info.cuda_built) {
    EXPECT_EQ(info.cuda_devices, 0);  // no CUDA build sees no device
  }
  EXPECT_EQ(describe(info).rfind("libtorch " + info.torch_version + ", c10d gloo ", 0), 0u) << describe(info);
}

}  // namespace
}  // namespace clustertwin::real
