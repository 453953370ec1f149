// real/gpu without CUDA (CT_CUDA_KERNELS=OFF): the same API, every call saying
// why it cannot run, so that callers need no #ifdef.

#include <string>

#include "real/gpu/gpu_kernels.h"

namespace clustertwin::real::gpu {
namespace {

constexpr const char* kNoCuda =
    "built without CUDA (CT_CUDA_KERNELS=OFF: no nvcc was found when configuring, or it was turned off)";

}  // namespace

int device_count(std::string* error) {
  if (error != nullptr) *error = kNoCuda;
  return 0;
}

StatusOr<double> spin_kernel_ms(int /*device*/, double /*milliseconds*/) {
  return Status::invalid_argument(std::string("spin_kernel_ms: ") + kNoCuda);
}

StatusOr<double> stream_bandwidth_gbps(int /*device*/, size_t /*bytes*/) {
  return Status::invalid_argument(std::string("stream_bandwidth_gbps: ") + kNoCuda);
}

}  // namespace clustertwin::real::gpu
