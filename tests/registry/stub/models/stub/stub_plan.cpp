#include "models/stub/stub_plan.h"

namespace clustertwin::models::stub {

Plan stub_plan(double compute_flops, int64_t gradient_bytes) {
  Plan plan;
  plan.system = "stub";
  plan.variant = "stub";
  plan.streams = {"compute", "comm"};
  Task compute;
  compute.id = 0;
  compute.name = "compute";
  compute.kind = TaskKind::kCompute;
  compute.stream = 0;
  compute.flops = compute_flops;
  plan.tasks.push_back(compute);
  Task allreduce;
  allreduce.id = 1;
  allreduce.name = "allreduce";
  allreduce.kind = TaskKind::kCollective;
  allreduce.stream = 1;
  allreduce.bytes = gradient_bytes;
  allreduce.collective = Collective{};
  allreduce.deps = {0};
  plan.tasks.push_back(allreduce);
  plan.tasks[0].prev_step_deps = {1};
  return plan;
}

}  // namespace clustertwin::models::stub
