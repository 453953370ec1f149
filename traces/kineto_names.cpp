#include "traces/kineto_names.h"

#include <cctype>

namespace clustertwin::traces::kineto {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

bool is_gpu_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "gpu_user_annotation";
}

bool is_nccl_kernel(std::string_view name) {
  return starts_with(name, "nccl");
}

std::optional<Category> category_for(std::string_view cat, std::string_view name, bool has_collective_arg,
                                     bool keep_runtime_calls) {
  if (cat == "kernel") {
    return has_collective_arg || is_nccl_kernel(name) ? Category::kComm : Category::kCompute;
  }
  if (cat == "gpu_memcpy" || cat == "gpu_memset") return Category::kCopy;
  if (cat == "cuda_runtime" || cat == "cuda_driver") {
    if (!keep_runtime_calls) return std::nullopt;
    return Category::kHost;
  }
  // cpu_op, user_annotation, gpu_user_annotation, python_function, and the
  // categories of other Kineto versions and backends ("Trace",
  // "cpu_instant_event", "xpu_runtime", ...): time a host or the profiler
  // spent, which is the one thing all of them have in common.
  return Category::kHost;
}

std::string normalise_collective(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (c == '_' || c == ' ' || c == '-') continue;
    s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  // Order matters: "allreduce" and "reducescatter" contain "reduce".
  if (contains(s, "alltoall")) return "alltoall";
  if (contains(s, "allreduce")) return "allreduce";
  if (contains(s, "allgather")) return "allgather";
  if (contains(s, "reducescatter")) return "reducescatter";
  if (starts_with(s, "broadcast")) return "broadcast";
  if (starts_with(s, "barrier")) return "barrier";
  if (s == "send" || s == "recv" || s == "reduce") return s;
  if (starts_with(s, "recvanysource")) return "recv";
  return s;
}

std::string collective_from_kernel(std::string_view name) {
  // ncclDevKernel_AllReduce_Sum_f32_RING_LL(...): the operation is the part
  // after the first '_'.
  const size_t underscore = name.find('_');
  if (underscore == std::string_view::npos) return "";
  std::string_view op = name.substr(underscore + 1);
  op = op.substr(0, op.find_first_of("_("));
  return normalise_collective(op);
}

std::optional<int64_t> dtype_bytes(std::string_view dtype) {
  // c10::ScalarType names, as c10d's record_param_comms writes them.
  static constexpr struct {
    std::string_view name;
    int64_t bytes;
  } kSizes[] = {
      {"Float", 4},
      {"Double", 8},
      {"Half", 2},
      {"BFloat16", 2},
      {"Long", 8},
      {"Int", 4},
      {"Short", 2},
      {"Char", 1},
      {"Byte", 1},
      {"Bool", 1},
      {"ComplexHalf", 4},
      {"ComplexFloat", 8},
      {"ComplexDouble", 16},
      {"Float8_e4m3fn", 1},
      {"Float8_e5m2", 1},
      {"Float8_e4m3fnuz", 1},
      {"Float8_e5m2fnuz", 1},
      {"UInt16", 2},
      {"UInt32", 4},
      {"UInt64", 8},
      {"QInt8", 1},
      {"QUInt8", 1},
      {"QInt32", 4},
  };
  for (const auto& s : kSizes) {
    if (s.name == dtype) return s.bytes;
  }
  return std::nullopt;
}

std::optional<int64_t> cpp_type_bytes(std::string_view type) {
  // The C++ type names the profiler records as "Input type" (c10::ScalarType's C++ types).
  static constexpr struct {
    std::string_view name;
    int64_t bytes;
  } kSizes[] = {
      {"float", 4},
      {"double", 8},
      {"c10::Half", 2},
      {"c10::BFloat16", 2},
      {"long int", 8},
      {"long", 8},
      {"int64_t", 8},
      {"int", 4},
      {"short int", 2},
      {"short", 2},
      {"signed char", 1},
      {"unsigned char", 1},
      {"char", 1},
      {"bool", 1},
      {"c10::complex<c10::Half>", 4},
      {"c10::complex<float>", 8},
      {"c10::complex<double>", 16},
      {"c10::Float8_e4m3fn", 1},
      {"c10::Float8_e5m2", 1},
      {"c10::Float8_e4m3fnuz", 1},
      {"c10::Float8_e5m2fnuz", 1},
  };
  for (const auto& s : kSizes) {
    if (s.name == type) return s.bytes;
  }
  return dtype_bytes(type);  // some versions write the ScalarType name ("Float")
}

std::string collective_of_operator(std::string_view name) {
  // c10d's ProcessGroupNCCL / ProcessGroupGloo name their operators "nccl:all_reduce", "gloo:all_to_all".
  for (std::string_view prefix : {std::string_view("nccl:"), std::string_view("gloo:")}) {
    if (name.substr(0, prefix.size()) == prefix) return normalise_collective(name.substr(prefix.size()));
  }
  return "";
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_blank(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back()))
    text.remove_suffix(1);
  return text;
}

std::string cost_key_for(std::string_view name) {
  return std::string(trim(name.substr(0, name.find('('))));
}

std::string gpu_stream_name(int64_t device, int64_t stream) {
  return "gpu" + std::to_string(device) + " stream " + std::to_string(stream);
}

std::string cpu_thread_name(int64_t tid) {
  return "cpu thread " + std::to_string(tid);
}

}  // namespace clustertwin::traces::kineto
