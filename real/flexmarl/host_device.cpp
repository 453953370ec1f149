#include "real/flexmarl/host_device.h"

#include "real/core/device.h"

namespace clustertwin::real::flexmarl {

at::Tensor host_buffer(at::IntArrayRef sizes, at::ScalarType dtype, at::Device device) {
  return at::empty(sizes, at::TensorOptions().dtype(dtype).pinned_memory(real::pin_host_memory_for(device)));
}

at::Tensor to_device(const at::Tensor& t, at::Device device) {
  if (t.device() == device) return t;
  if (!t.is_cpu() || !real::pin_host_memory_for(device)) return t.to(at::TensorOptions().device(device));
  at::Tensor pinned = t;
  if (!t.is_pinned()) {
    pinned = host_buffer(t.sizes(), t.scalar_type(), device);
    pinned.copy_(t);
  }
  return pinned.to(at::TensorOptions().device(device), /*non_blocking=*/true);
}

at::Tensor to_host(const at::Tensor& t) {
  if (t.is_cpu()) return t;
  at::Tensor host = host_buffer(t.sizes(), t.scalar_type(), t.device());
  host.copy_(t);  // blocking: the copy runs after the stream's queued work and is done on return
  return host;
}

}  // namespace clustertwin::real::flexmarl
