// Pass 2 of the Kineto import: one Kineto event as one of ours (category,
// time from the origin, collective, bytes, launch, gradient bytes, peer or
// group layout).
#include "traces/kineto_import_internal.h"
#include "traces/kineto_names.h"

namespace clustertwin::traces::detail {

Event convert(const KinetoEvent& e, Category category, const Input& in, int64_t stream, const Micros& origin,
              int64_t world_size) {
  Event out;
  out.name = e.name;
  out.category = category;
  out.rank = in.rank;
  out.stream = stream;
  out.ts_us = micros_between(origin, with_base(e.ts, in.header.base_ns));
  out.dur_us = e.dur;
  out.cost_key = kineto::cost_key_for(e.name);
  if (e.has_collective) {
    out.collective = kineto::normalise_collective(e.collective);
  } else if (category == Category::kComm) {
    out.collective = kineto::collective_from_kernel(e.name);
  }
  if (const std::optional<int64_t> message = message_bytes(e)) {
    out.bytes = message;
  } else if (category == Category::kCopy) {
    out.bytes = e.bytes;
  }
  out.group_size = e.group_size;
  out.flops = e.flops;
  GroupArgs group = GroupArgs::of(e);
  if (const Launch* launch = in.launch_of(e)) {
    // A launch before the origin (the earliest imported event) cannot be placed on the trace's axis.
    const double launched = micros_between(origin, with_base(launch->ts, in.header.base_ns));
    if (launched >= 0) {
      out.host_ts_us = launched;
      out.host_dur_us = launch->dur;
    }
    auto grads = in.grad_bytes.find(*e.correlation);
    if (grads != in.grad_bytes.end()) out.grad_bytes = grads->second;
    const bool known = out.collective != "sendrecv" && !out.collective.empty() && out.bytes;
    if (category == Category::kComm && !known) {
      if (const CommOperator* op = in.operator_around(*launch)) {
        out.collective = op->collective;
        if (op->bytes) out.bytes = op->bytes;
        if (op->group_size) out.group_size = op->group_size;
      }
    }
    // A kernel without c10d's group args (older PyTorch copies none onto kernels) takes its operator's.
    const bool has_group = group.rank || group.dst || group.src || !group.ranks.empty() || group.start;
    if (category == Category::kComm && !has_group) {
      if (const CommOperator* op = in.operator_around(*launch)) group = op->group;
    }
  }
  if (category == Category::kComm) {
    if (out.collective == "send" || out.collective == "recv") {
      out.peer = group.peer(out.collective, world_size);
    } else if (const auto layout = group.layout()) {
      out.group_start = layout->first;
      out.group_stride = layout->second;
    }
  }
  return out;
}

}  // namespace clustertwin::traces::detail
