#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

/// Our own CUDA kernels, no libtorch: a busy-wait kernel of known length (to
/// measure what the tracer adds around GPU work, and whether two streams
/// overlap) and a device-to-device copy bandwidth probe.
///
/// Plain C++ with no CUDA header, so every build has it: with
/// CT_CUDA_KERNELS=ON it is gpu_kernels.cu (nvcc), otherwise gpu_stub.cpp, whose
/// calls fail saying the build has no CUDA. Callers never need an #ifdef; they
/// ask device_count() and skip GPU work when it is 0.
///
/// Errors are values whose message starts with the function's name. Bad
/// arguments are invalid_argument naming the value; a failed CUDA call is
/// io_error with the host, the file and line of the call, the call itself and
/// CUDA's error string and name, much as nccl-tests reports them:
///   "stream_bandwidth_gbps: gpu7: gpu_kernels.cu:99: cudaMalloc(buffer, bytes): out of memory
///    (cudaErrorMemoryAllocation)"
namespace clustertwin::real::gpu {

/// Number of CUDA devices this process sees. Returns 0 when there are none or
/// CUDA cannot be used (no driver, built without CUDA) and then, if `error` is
/// not null, sets *error to why ("built without CUDA (CT_CUDA_KERNELS=OFF)", or
/// the failed CUDA call as above); leaves *error alone when it returns > 0.
int device_count(std::string* error);

/// Runs one GPU thread on `device` that busy-waits for `milliseconds` of the
/// GPU's global timer (nanoseconds, independent of the SM clock), and returns
/// how long the kernel took in milliseconds, measured by CUDA events recorded
/// around it on a stream of its own: the request plus a few microseconds of
/// launch. An untimed warm-up launch comes first, so module loading is not
/// counted. The calling thread's current device is restored afterwards.
///
/// Errors: invalid_argument when `device` is not in [0, device_count()) or
/// `milliseconds` is not in (0, 60000]; io_error when a CUDA call fails;
/// internal when the global timer did not advance (the wait is bounded in SM
/// cycles, so such a device makes the call fail rather than hang).
StatusOr<double> spin_kernel_ms(int device, double milliseconds);

/// Copies `bytes` from one device buffer to another on `device`
/// (cudaMemcpyAsync, device to device): two untimed copies, then twenty each
/// timed by CUDA events. Returns the median bandwidth in GB/s (1e9 bytes/s),
/// counting bytes read plus bytes written (2 x `bytes` per copy), as STREAM's
/// copy does. Checks that the copied bytes arrived. A few hundred MiB measure
/// device memory; sizes under the L2 (60 MB on an H200) measure the cache, and
/// tiny sizes the launch overhead.
///
/// Errors: invalid_argument when `device` is out of range, `bytes` is 0, or two
/// buffers of `bytes` do not fit in the device's free memory; io_error when a
/// CUDA call fails; internal when the destination does not hold the source.
StatusOr<double> stream_bandwidth_gbps(int device, size_t bytes);

}  // namespace clustertwin::real::gpu
