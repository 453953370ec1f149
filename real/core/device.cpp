#include "real/core/device.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>

#include <cstdio>

#if defined(CT_HAVE_CUDA_TORCH)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace clustertwin::real {

DeviceSupport device_support() {
  DeviceSupport s;
  s.cuda_built = torch::cuda::is_available() || at::hasCUDA();
  s.gpus = s.cuda_built ? static_cast<int>(torch::cuda::device_count()) : 0;
  return s;
}

StatusOr<c10::Device> choose_device(const std::string& device, int local_rank, const DeviceSupport& support) {
  const bool gpu = support.cuda_built && support.gpus > 0;
  if (device == "cpu" || (device == "auto" && !gpu)) return c10::Device(c10::kCPU);
  if (device != "cuda" && device != "auto") {
    return Status::invalid_argument("device '" + device + "': unknown device (allowed: cpu, cuda, auto)");
  }
  if (!gpu) {
    return Status::invalid_argument(std::string("device cuda: ") +
                                    (support.cuda_built
                                         ? "no GPU is visible to this process"
                                         : "this build's libtorch has no CUDA (build against a CUDA-enabled libtorch: "
                                           "docs/device-check.md)"));
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank % support.gpus));
}

std::string describe_device(c10::Device device) {
  if (device.is_cpu()) return "cpu";
#if defined(CT_HAVE_CUDA_TORCH)
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(device.index());
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(p->totalGlobalMem) / (1024.0 * 1024 * 1024));
  return device.str() + " (" + p->name + ", " + memory + ")";
#else
  return device.str();
#endif
}

void synchronize(c10::Device device) {
  if (device.is_cpu()) return;
#if defined(CT_HAVE_CUDA_TORCH)
  c10::cuda::CUDAGuard guard(device);
  c10::cuda::device_synchronize();
#endif
}

const at::Tensor& used_here(const at::Tensor& t) {
  // VirtualGuardImpl reaches the CUDA stream API through the device-type
  // registry: no CUDA headers, and only called for a CUDA tensor.
  if (t.defined() && t.is_cuda()) t.record_stream(c10::impl::VirtualGuardImpl(t.device().type()).getStream(t.device()));
  return t;
}

bool pin_host_memory_for(c10::Device device) {
  return device.is_cuda();
}

}  // namespace clustertwin::real
