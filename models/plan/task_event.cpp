#include "models/plan/task_event.h"

namespace clustertwin::models {

traces::Category category_of(TaskKind kind) {
  switch (kind) {
    case TaskKind::kCompute:
      return traces::Category::kCompute;
    case TaskKind::kCollective:
      return traces::Category::kComm;
    case TaskKind::kCopy:
      return traces::Category::kCopy;
    case TaskKind::kLookup:
      return traces::Category::kLookup;
    case TaskKind::kHost:
      return traces::Category::kHost;
  }
  return traces::Category::kHost;
}

traces::Event task_event(const Task& t, int64_t rank, int stream, int step, double start_us, double end_us,
                         int64_t group_size, int64_t peer) {
  traces::Event e;
  e.name = t.name;
  e.category = category_of(t.kind);
  e.rank = rank;
  e.stream = stream;
  e.ts_us = start_us;
  e.dur_us = end_us - start_us;
  e.task_id = t.id;
  e.cost_key = t.cost_key;
  e.step = step;
  if (t.micro_batch >= 0) e.micro_batch = t.micro_batch;
  if (t.bytes > 0) e.bytes = t.bytes;
  if (t.flops > 0) e.flops = t.flops;
  if (t.collective) {
    e.collective = collective_op_name(t.collective->op);
    if (group_size > 0) e.group_size = group_size;
    if (peer >= 0) e.peer = peer;
  }
  return e;
}

}  // namespace clustertwin::models
