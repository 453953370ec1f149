#pragma once

// Where a real executor's tensors live, chosen once per process from
// `--device cpu|cuda|auto`, and the few device operations the executors need
// beyond ATen's: waiting for the device, pinned host buffers, a name for the
// first output line and the trace.
//
// Only c10's light Device type here: the CUDA headers stay in device.cpp
// (and only in builds against a CUDA-enabled libtorch, CT_HAVE_CUDA_TORCH).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>

#include "common/status.h"

namespace clustertwin::real {

/// What this binary and this machine offer.
struct DeviceSupport {
  bool cuda_built = false;  // linked against a CUDA-enabled libtorch
  int gpus = 0;             // GPUs visible to this process
};
DeviceSupport device_support();

/// The device a run's `device` field names, for the rank with `local_rank`
/// on its node: "cpu"; "cuda" (GPU local_rank mod the GPUs visible;
/// InvalidArgument naming the field, "device cuda: ...", when the build has
/// no CUDA or no GPU is visible); "auto" (cuda where possible, else cpu).
/// InvalidArgument for any other word.
StatusOr<c10::Device> choose_device(const std::string& device, int local_rank, const DeviceSupport& support);

/// "cpu", or "cuda:0 (NVIDIA H200, 139.8 GiB)".
std::string describe_device(c10::Device device);

/// Blocks until all work queued on `device` by this process is done (a no-op on the CPU).
void synchronize(c10::Device device);

/// Tells the device's caching allocator that `t` is used by the work the
/// calling thread queues on its current stream, so that its memory is not
/// handed to a new tensor before that work is done. Needed wherever a task
/// reads a tensor made on another stream (PlanRunner: another plan stream):
/// freeing it on the host only frees it for the stream that made it, and a
/// new tensor there could be written while this stream still reads the old
/// one. Returns `t`; does nothing off the GPU.
const at::Tensor& used_here(const at::Tensor& t);

/// Whether host buffers for `device` should be pinned (page-locked): true
/// on a GPU, where a copy from pinned memory can run asynchronously on a
/// stream of its own.
bool pin_host_memory_for(c10::Device device);

}  // namespace clustertwin::real
