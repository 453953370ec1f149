#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "traces/event.h"

namespace clustertwin::traces::kineto {

/// Whether a Kineto category ("cat") runs on a GPU, where pid is the device
/// index and tid the CUDA stream, or on the host, where they are the OS
/// process and thread ids.
bool is_gpu_category(std::string_view cat);

/// The category of ours for a complete Kineto event, or nothing when the
/// event is not imported (runtime and driver calls unless `keep_runtime_calls`).
///
///   kernel                                   -> compute (comm when it is an NCCL kernel
///                                               or carries "Collective name")
///   gpu_memcpy, gpu_memset                   -> copy
///   cpu_op, user_annotation, python_function,
///   gpu_user_annotation and any other cat    -> host
///   cuda_runtime, cuda_driver                -> host, or dropped
///
/// Only a kernel becomes `comm`: that is the interval the network is busy.
/// The CPU side of a collective (the `record_param_comms` op, the
/// "nccl:all_reduce" annotation) stays `host`; it keeps the collective's args
/// so that launches can be matched to kernels, but it moves no bytes.
std::optional<Category> category_for(std::string_view cat, std::string_view name, bool has_collective_arg,
                                     bool keep_runtime_calls);

/// True for NCCL kernels ("ncclKernel_...", "ncclDevKernel_...").
bool is_nccl_kernel(std::string_view name);

/// Our collective name for PyTorch's "Collective name" arg: lower case
/// without separators, with PyTorch's variants folded onto the base
/// operation ("all_to_all", "alltoall_base" -> "alltoall";
/// "_allgather_base", "all_gather_into_tensor" -> "allgather";
/// "reduce_scatter_tensor" -> "reducescatter"). Names outside our set
/// (allreduce, alltoall, allgather, reducescatter, broadcast, send, recv,
/// reduce, barrier) come back lower case without separators ("gather").
std::string normalise_collective(std::string_view name);

/// The collective of an NCCL kernel from its name, for traces without the
/// "Collective name" arg: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)" ->
/// "allreduce", "ncclKernel_SendRecv_..." -> "sendrecv". "" when the name has
/// no operation part.
std::string collective_from_kernel(std::string_view name);

/// Bytes per element of a PyTorch dtype as Kineto writes it ("Float" -> 4,
/// "BFloat16" -> 2); nothing for a dtype we do not know.
std::optional<int64_t> dtype_bytes(std::string_view dtype);

/// Bytes per element of a C++ type as the profiler writes a CPU operator's
/// "Input type" ("float" -> 4, "c10::BFloat16" -> 2, "unsigned char" -> 1);
/// nothing for a type we do not know (a tensor list, "Scalar").
std::optional<int64_t> cpp_type_bytes(std::string_view type);

/// The collective of a c10d CPU operator ("nccl:all_to_all" -> "alltoall",
/// "nccl:_all_gather_base" -> "allgather", "gloo:broadcast" -> "broadcast");
/// "" for any other operator.
std::string collective_of_operator(std::string_view name);

/// The event name without its argument list ("k(int, float*)" -> "k"), with
/// surrounding blanks trimmed, so that every launch of a kernel shares a key.
std::string cost_key_for(std::string_view name);

/// `text` without leading and trailing blanks.
std::string_view trim(std::string_view text);

/// Stream names for a (pid, tid) without a "thread_name" metadata event.
std::string gpu_stream_name(int64_t device, int64_t stream);  // "gpu0 stream 7"
std::string cpu_thread_name(int64_t tid);                     // "cpu thread 1234"

}  // namespace clustertwin::traces::kineto
