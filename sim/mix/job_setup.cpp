#include "sim/mix/job_setup.h"

#include <algorithm>

#include "models/plan/plan_json.h"
#include "sim/core/plan_job.h"

namespace clustertwin::sim::mix {

models::Plan data_parallel_plan(int64_t allreduce_bytes) {
  models::Plan plan;
  plan.system = "synthetic";
  plan.variant = "data_parallel";
  plan.streams = {"compute", "comm"};
  models::Task compute;
  compute.id = 0;
  compute.name = "compute";
  compute.kind = models::TaskKind::kCompute;
  compute.stream = 0;
  compute.cost_key = "mix_compute";
  plan.tasks.push_back(compute);
  if (allreduce_bytes > 0) {
    models::Task allreduce;
    allreduce.id = 1;
    allreduce.name = "allreduce";
    allreduce.kind = models::TaskKind::kCollective;
    allreduce.stream = 1;
    allreduce.bytes = allreduce_bytes;
    allreduce.collective = models::Collective{};  // all-reduce over the world, the algorithm's default (ring)
    allreduce.deps = {0};
    plan.tasks.push_back(allreduce);
    plan.tasks[0].prev_step_deps = {1};  // the next step's compute needs the reduced gradients
  }
  return plan;
}

cluster::ClusterProfile job_profile(const cluster::ClusterProfile& profile, const std::vector<int>& nodes,
                                    int workers) {
  cluster::ClusterProfile out = profile;
  out.node_device_type.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto it = profile.node_device_type.find(nodes[i]);
    if (it != profile.node_device_type.end()) out.node_device_type[static_cast<int>(i)] = it->second;
  }
  out.slowdown.clear();
  const int per_node = std::min(workers, profile.devices_per_node);
  for (int r = 0; r < workers; ++r) {
    const int device = nodes[r / per_node] * profile.devices_per_node + r % per_node;
    auto it = profile.slowdown.find(device);
    if (it != profile.slowdown.end()) out.slowdown[r] = it->second;
  }
  return out;
}

StatusOr<JobSetup> make_job_setup(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile,
                                  const std::vector<int>& nodes, uint64_t seed) {
  JobSetup s;
  s.name = job.name;
  s.nodes = nodes;
  s.profile = job_profile(profile, nodes, job.workers);
  const JobFrame frame = job_frame(job, seed);
  if (job.kind == JobSpec::Kind::kSystem) {
    auto prepared = find_twin(job.system)->prepare(*job.settings, s.profile, frame);
    if (!prepared.is_ok()) return prepared.status();
    s.job = std::move(prepared).value();
    return s;
  }
  models::Plan plan;
  cluster::ClusterProfile priced = s.profile;
  std::string runs;
  if (job.kind == JobSpec::Kind::kDataParallel) {
    plan = data_parallel_plan(job.allreduce_bytes);
    priced.costs["mix_compute"] = cluster::CostModel{};
    priced.costs["mix_compute"].latency = job.compute_s;
    runs = "data_parallel";
  } else {
    auto read = models::read_plan(job.plan_file);
    if (!read.is_ok()) return read.status().with_context(frame.job());
    plan = std::move(read).value();
    runs = "plan " + job.plan_file.substr(job.plan_file.rfind('/') + 1);  // the file's name: a table column
  }
  auto prepared = PlanJob::make(std::move(plan), std::move(priced), frame.apply(SimOptions{}), std::move(runs));
  if (!prepared.is_ok()) return prepared.status().with_context(frame.job());
  s.job = std::move(prepared).value();
  return s;
}

}  // namespace clustertwin::sim::mix
