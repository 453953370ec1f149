// Tensors in and out of a StateDump (state_tensors.h).

#include "real/core/state_tensors.h"

#include <cstring>
#include <sstream>

#include "common/check.h"

namespace clustertwin::real {
namespace {

at::ScalarType scalar_type_of(DumpTensor::Type type) {
  switch (type) {
    case DumpTensor::Type::kInt64:
      return at::kLong;
    case DumpTensor::Type::kFloat64:
      return at::kDouble;
    case DumpTensor::Type::kFloat32:
      break;
  }
  return at::kFloat;
}

std::string shape_text(at::IntArrayRef shape) {
  std::ostringstream s;
  s << shape;
  return s.str();
}

}  // namespace

DumpTensor dump_tensor(const std::string& name, const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU).contiguous();
  DumpTensor d;
  d.name = name;
  CT_CHECK(c.scalar_type() == at::kLong || c.scalar_type() == at::kFloat || c.scalar_type() == at::kDouble)
      << name << ": " << c.scalar_type();
  d.type = c.scalar_type() == at::kLong    ? DumpTensor::Type::kInt64
           : c.scalar_type() == at::kFloat ? DumpTensor::Type::kFloat32
                                           : DumpTensor::Type::kFloat64;
  d.shape.assign(c.sizes().begin(), c.sizes().end());
  d.bytes.assign(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel() * c.element_size()));
  return d;
}

at::Tensor int64_scalar(int64_t value) {
  return at::full({1}, value, at::kLong);
}

StatusOr<at::Tensor> restore_tensor(const StateDump& dump, const std::string& file, const std::string& name,
                                    at::ScalarType type, at::IntArrayRef shape) {
  const std::string where = file + ": tensor '" + name + "'";
  for (const DumpTensor& d : dump.tensors) {
    if (d.name != name) continue;
    if (scalar_type_of(d.type) != type) {
      return Status::invalid_argument(where + ": type " + std::string(c10::toString(scalar_type_of(d.type))) +
                                      ", this run has " + c10::toString(type));
    }
    if (at::IntArrayRef(d.shape) != shape) {
      return Status::invalid_argument(where + ": shape " + shape_text(d.shape) + ", this run has " + shape_text(shape));
    }
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
    std::memcpy(t.data_ptr(), d.bytes.data(), d.bytes.size());
    return t;
  }
  return Status::invalid_argument(where + ": missing");
}

int64_t dump_leading_dim(const StateDump& dump, const std::string& name) {
  for (const DumpTensor& d : dump.tensors) {
    if (d.name == name) return d.shape.empty() ? 0 : d.shape[0];
  }
  return 0;
}

}  // namespace clustertwin::real
