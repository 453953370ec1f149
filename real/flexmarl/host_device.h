#pragma once

// Copies between host memory and a rank's device, as a worker's jobs make
// them: published weights loaded into an inference engine, and trainer state
// swapped in and out (FlexMARL's agent-centric allocation keeps an agent's
// trainer state in host memory while no trainer holds it).
//
// On a GPU the host side is pinned (page-locked) memory: an upload from it
// runs asynchronously on the current stream, and a download into it runs at
// the copy engine's speed. On the CPU every function returns the tensor
// itself, so that `--device cpu` computes exactly what it did before.

#include <ATen/ATen.h>

namespace clustertwin::real::flexmarl {

/// An uninitialised host tensor for transfers to or from `device`: pinned
/// when `device` is a GPU, ordinary memory on the CPU.
at::Tensor host_buffer(at::IntArrayRef sizes, at::ScalarType dtype, at::Device device);

/// `t` on `device`: `t` itself when it is there already; from host memory
/// through pinned memory without waiting (later work on the current stream
/// sees the data, and the caching host allocator keeps the pinned buffer
/// until the copy is done); between devices, ATen's copy.
at::Tensor to_device(const at::Tensor& t, at::Device device);

/// `t` in host memory, readable when this returns: `t` itself on the CPU;
/// from a GPU, a copy into pinned memory after the work queued before it.
at::Tensor to_host(const at::Tensor& t);

}  // namespace clustertwin::real::flexmarl
