// The CUDA implementation of real/gpu/gpu_kernels.h (CT_CUDA_KERNELS=ON),
// through the CUDA runtime API. Every CUDA call is checked, kernel launches
// too (cudaGetLastError), and a failure returns as a Status naming the host,
// file, line and call, as nccl-tests' CUDACHECK prints them.

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "real/gpu/gpu_kernels.h"

namespace clustertwin::real::gpu {
namespace {

constexpr double kMaxSpinMs = 60000.0;
constexpr int kWarmupCopies = 2;
constexpr int kTimedCopies = 20;
constexpr unsigned char kCopyPattern = 0xA5;
// Used when the device does not report its clock; an H200 peaks near 1.98 GHz.
constexpr int kFallbackClockKhz = 2000000;

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

std::string format_number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// "gpu7: gpu_kernels.cu:99: cudaMalloc(buffer, bytes): out of memory (cudaErrorMemoryAllocation)"
Status cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  const char* base = slash != nullptr ? slash + 1 : file;
  return Status::io_error(host_name() + ": " + base + ":" + std::to_string(line) + ": " + call + ": " +
                          cudaGetErrorString(error) + " (" + cudaGetErrorName(error) + ")");
}

}  // namespace
}  // namespace clustertwin::real::gpu

/// Returns from the enclosing function (Status or StatusOr) when `call`, a CUDA
/// runtime call, does not return cudaSuccess.
#define CT_CUDA_RETURN_IF_ERROR(call)                                                         \
  do {                                                                                        \
    const cudaError_t ct_cuda_error_ = (call);                                                \
    if (ct_cuda_error_ != cudaSuccess) {                                                      \
      return ::clustertwin::real::gpu::cuda_error(ct_cuda_error_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (false)

namespace clustertwin::real::gpu {
namespace {

/// What one call takes from CUDA (the current device, a stream, events, device
/// memory), given back on every return path. Errors while giving back are
/// ignored: the call's result is decided by then, and the caller could do
/// nothing about them.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    for (cudaEvent_t event : events_)
      (void)cudaEventDestroy(event);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    for (void* buffer : buffers_)
      (void)cudaFree(buffer);
    if (previous_device_ >= 0) (void)cudaSetDevice(previous_device_);
  }

  /// Makes `device` current (the previous one comes back at destruction) and
  /// creates a stream that does not synchronise with the legacy default stream.
  Status enter(int device) {
    CT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous_device_));
    CT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    CT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return Status::ok();
  }

  Status new_event(cudaEvent_t* event) {
    CT_CUDA_RETURN_IF_ERROR(cudaEventCreate(event));
    events_.push_back(*event);
    return Status::ok();
  }

  Status allocate(size_t bytes, void** buffer) {
    CT_CUDA_RETURN_IF_ERROR(cudaMalloc(buffer, bytes));
    buffers_.push_back(*buffer);
    return Status::ok();
  }

  cudaStream_t stream() const { return stream_; }

 private:
  int previous_device_ = -1;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::vector<void*> buffers_;
};

Status check_device(int device) {
  int count = 0;
  CT_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    return Status::invalid_argument("device " + std::to_string(device) + " does not exist: this process sees " +
                                    std::to_string(count) + " CUDA device(s), numbered from 0");
  }
  return Status::ok();
}

// The GPU's global timer, in nanoseconds; unlike clock64() it does not depend
// on the SM clock, which an idle H200 runs at a sixth of its peak.
__device__ uint64_t global_timer_ns() {
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// One thread waits until `ns` nanoseconds have passed. `max_cycles` bounds the
// wait in SM cycles so that a timer that does not advance ends the kernel
// (setting *timed_out) instead of hanging the device.
__global__ void spin_kernel(uint64_t ns, long long max_cycles, int* timed_out) {
  const uint64_t start = global_timer_ns();
  const long long start_cycles = clock64();
  while (global_timer_ns() - start < ns) {
    if (clock64() - start_cycles > max_cycles) {
      *timed_out = 1;
      return;
    }
  }
}

cudaError_t launch_spin_kernel(cudaStream_t stream, uint64_t ns, long long max_cycles, int* timed_out) {
  spin_kernel<<<1, 1, 0, stream>>>(ns, max_cycles, timed_out);
  return cudaGetLastError();
}

}  // namespace

int device_count(std::string* error) {
  int count = 0;
  const cudaError_t result = cudaGetDeviceCount(&count);
  if (result != cudaSuccess) {
    if (error != nullptr) *error = cuda_error(result, "cudaGetDeviceCount(&count)", __FILE__, __LINE__).message();
    return 0;
  }
  if (count == 0 && error != nullptr) *error = host_name() + ": the CUDA runtime sees no device";
  return count;
}

namespace {

StatusOr<double> spin(int device, double milliseconds) {
  if (!(milliseconds > 0.0 && milliseconds <= kMaxSpinMs)) {  // written so that NaN fails too
    return Status::invalid_argument("milliseconds " + format_number(milliseconds) + " is not in (0, " +
                                    format_number(kMaxSpinMs) + "]");
  }
  CT_RETURN_IF_ERROR(check_device(device));
  Scratch scratch;
  CT_RETURN_IF_ERROR(scratch.enter(device));

  int clock_khz = 0;
  CT_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  if (clock_khz <= 0) clock_khz = kFallbackClockKhz;
  // Milliseconds times kHz is cycles. Four times the request at the peak clock
  // (longer at lower clocks): only a stuck timer reaches it.
  const long long max_cycles = static_cast<long long>(4.0 * milliseconds * clock_khz);
  const auto ns = static_cast<uint64_t>(milliseconds * 1e6);

  void* flag = nullptr;
  CT_RETURN_IF_ERROR(scratch.allocate(sizeof(int), &flag));
  int* timed_out = static_cast<int*>(flag);
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  CT_RETURN_IF_ERROR(scratch.new_event(&start));
  CT_RETURN_IF_ERROR(scratch.new_event(&stop));

  CT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(timed_out, 0, sizeof(int), scratch.stream()));
  // A warm-up of zero length loads the module, so the timed launch does not pay for it.
  CT_CUDA_RETURN_IF_ERROR(launch_spin_kernel(scratch.stream(), 0, max_cycles, timed_out));
  CT_CUDA_RETURN_IF_ERROR(cudaEventRecord(start, scratch.stream()));
  CT_CUDA_RETURN_IF_ERROR(launch_spin_kernel(scratch.stream(), ns, max_cycles, timed_out));
  CT_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop, scratch.stream()));
  CT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));

  float elapsed_ms = 0.0f;
  CT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&elapsed_ms, start, stop));
  int host_timed_out = 0;
  CT_CUDA_RETURN_IF_ERROR(cudaMemcpy(&host_timed_out, timed_out, sizeof(int), cudaMemcpyDeviceToHost));
  if (host_timed_out != 0) {
    return Status::internal(host_name() + ": device " + std::to_string(device) +
                            ": the global timer did not advance; the wait ended after " + std::to_string(max_cycles) +
                            " SM cycles");
  }
  return static_cast<double>(elapsed_ms);
}

StatusOr<double> copy_bandwidth(int device, size_t bytes) {
  if (bytes == 0) return Status::invalid_argument("bytes 0: give at least one byte to copy");
  CT_RETURN_IF_ERROR(check_device(device));
  Scratch scratch;
  CT_RETURN_IF_ERROR(scratch.enter(device));

  size_t free_bytes = 0;
  size_t total_bytes = 0;
  CT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > free_bytes / 2) {
    return Status::invalid_argument("bytes " + std::to_string(bytes) + ": two buffers of that size do not fit in the " +
                                    std::to_string(free_bytes) + " bytes free on device " + std::to_string(device));
  }
  void* src = nullptr;
  void* dst = nullptr;
  CT_RETURN_IF_ERROR(scratch.allocate(bytes, &src));
  CT_RETURN_IF_ERROR(scratch.allocate(bytes, &dst));
  std::vector<cudaEvent_t> starts(kTimedCopies);
  std::vector<cudaEvent_t> stops(kTimedCopies);
  for (int i = 0; i < kTimedCopies; ++i) {
    CT_RETURN_IF_ERROR(scratch.new_event(&starts[i]));
    CT_RETURN_IF_ERROR(scratch.new_event(&stops[i]));
  }

  const cudaStream_t stream = scratch.stream();
  // A pattern, not zeros: the check below must tell a copy from an untouched buffer.
  CT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(src, kCopyPattern, bytes, stream));
  CT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, stream));
  for (int i = 0; i < kWarmupCopies; ++i) {
    CT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  }
  // A start and a stop event per copy, so that a gap between two launches is not counted as copying.
  for (int i = 0; i < kTimedCopies; ++i) {
    CT_CUDA_RETURN_IF_ERROR(cudaEventRecord(starts[i], stream));
    CT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    CT_CUDA_RETURN_IF_ERROR(cudaEventRecord(stops[i], stream));
  }
  CT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));

  std::vector<float> times_ms(kTimedCopies);
  for (int i = 0; i < kTimedCopies; ++i) {
    CT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&times_ms[i], starts[i], stops[i]));
  }
  std::sort(times_ms.begin(), times_ms.end());
  const double median_ms = times_ms[kTimedCopies / 2];

  unsigned char first = 0;
  unsigned char last = 0;
  CT_CUDA_RETURN_IF_ERROR(cudaMemcpy(&first, dst, 1, cudaMemcpyDeviceToHost));
  CT_CUDA_RETURN_IF_ERROR(cudaMemcpy(&last, static_cast<unsigned char*>(dst) + bytes - 1, 1, cudaMemcpyDeviceToHost));
  if (first != kCopyPattern || last != kCopyPattern) {
    return Status::internal(host_name() + ": device " + std::to_string(device) + ": the copy of " +
                            std::to_string(bytes) + " bytes did not arrive (first byte " + std::to_string(first) +
                            ", last " + std::to_string(last) + ", expected " + std::to_string(kCopyPattern) + ")");
  }
  if (median_ms <= 0.0) {
    return Status::internal(host_name() + ": device " + std::to_string(device) + ": copies of " +
                            std::to_string(bytes) + " bytes took no measurable time; copy more bytes");
  }
  return 2.0 * static_cast<double>(bytes) / (median_ms * 1e-3) / 1e9;
}

// Puts the public function's name before every error of `result`.
StatusOr<double> named(std::string_view function, StatusOr<double> result) {
  if (!result.is_ok()) return result.status().with_context(function);
  return result;
}

}  // namespace

StatusOr<double> spin_kernel_ms(int device, double milliseconds) {
  return named("spin_kernel_ms", spin(device, milliseconds));
}

StatusOr<double> stream_bandwidth_gbps(int device, size_t bytes) {
  return named("stream_bandwidth_gbps", copy_bandwidth(device, bytes));
}

}  // namespace clustertwin::real::gpu
