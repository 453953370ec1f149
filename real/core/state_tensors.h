#pragma once

// Tensors in and out of a StateDump (common/state_dump.h): what the real
// executors' --dump-state and checkpoints are made of. A restore checks the
// tensor's name, dtype and shape against what this run expects, so that a
// checkpoint of another model is refused naming the tensor, not copied.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/state_dump.h"
#include "common/status.h"

namespace clustertwin::real {

/// `t` (int64, float32 or float64; any device) as the dump's tensor `name`,
/// its elements copied to host memory.
DumpTensor dump_tensor(const std::string& name, const at::Tensor& t);

/// A one-element int64 tensor: a counter or a position in a dump.
at::Tensor int64_scalar(int64_t value);

/// The dump's tensor `name` on the CPU, of `type` and `shape`; InvalidArgument
/// "FILE: tensor 'NAME': ..." saying what differs (type, shape) or that it is
/// missing.
StatusOr<at::Tensor> restore_tensor(const StateDump& dump, const std::string& file, const std::string& name,
                                    at::ScalarType type, at::IntArrayRef shape);

/// The first dimension of the dump's tensor `name` (0 when missing or a scalar).
int64_t dump_leading_dim(const StateDump& dump, const std::string& name);

}  // namespace clustertwin::real
