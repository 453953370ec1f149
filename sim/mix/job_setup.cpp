#include "sim/mix/job_setup.h"

#include <algorithm>

#include "models/nestpipe/plans.h"
#include "models/plan/plan_json.h"
#include "sim/core/plan_run.h"
#include "sim/mix/flowtrain_settings.h"
#include "sim/nestpipe/nestpipe_twin.h"

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
  const std::string where = mix.file + ": " + job.field + " ('" + job.name + "')";
  JobSetup s;
  s.name = job.name;
  s.nodes = nodes;
  s.profile = job_profile(profile, nodes, job.workers);
  switch (job.kind) {
    case JobSpec::Kind::kDataParallel: {
      s.plan = data_parallel_plan(job.allreduce_bytes);
      s.profile.costs["mix_compute"] = cluster::CostModel{};
      s.profile.costs["mix_compute"].latency = job.compute_s;
      s.runs = "data_parallel";
      break;
    }
    case JobSpec::Kind::kPlan: {
      auto plan = models::read_plan(job.plan_file);
      if (!plan.is_ok()) return plan.status().with_context(where);
      s.plan = std::move(plan).value();
      s.runs = "plan " + job.plan_file.substr(job.plan_file.rfind('/') + 1);  // the file's name: a table column
      break;
    }
    case JobSpec::Kind::kSystem: {
      if (job.system == "flowtrain") {
        // FlowTrain's own actors on the job's view, priced by its own model (sim/flowtrain/flowtrain_job.h).
        const flowtrain::FlowTrainSetup setup = flowtrain_setup(job, seed);
        auto prepared = flowtrain::FlowTrainJob::prepare(setup, s.profile, job.flowtrain_mode,
                                                         flowtrain_setting_name(mix.file, job));
        if (!prepared.is_ok()) return prepared.status();
        s.flowtrain = std::move(prepared).value();
        s.runs = std::string("flowtrain/") + flowtrain::flowtrain_mode_name(job.flowtrain_mode);
        s.options.workers = job.workers;
        s.options.seed = seed;
        s.options.steps = setup.steps;
        s.options.warmup_steps = 1;  // its first step
        s.options.drain_steps = 0;
        return s;
      }
      // nestpipe, whose twin is a step plan.
      const std::string name = job.variant.empty() ? "nestpipe" : job.variant;
      auto variant = models::nestpipe::variant_from_name(name);
      if (!variant) {
        return Status::invalid_argument(mix.file + ": field '" + job.field + ".variant': '" + name +
                                        "': unknown nestpipe variant (allowed: " + models::nestpipe::variant_list() +
                                        ")");
      }
      nestpipe::NestPipeSetup setup;
      setup.seed = seed;
      auto plan = nestpipe::nestpipe_plan(setup, *variant, job.workers);
      if (!plan.is_ok()) return plan.status().with_context(where);
      s.plan = std::move(plan).value();
      nestpipe::add_nestpipe_default_costs(&s.profile);
      s.options = nestpipe::nestpipe_sim_options();
      s.runs = "nestpipe/" + name;
      break;
    }
  }
  s.options.workers = job.workers;
  s.options.seed = seed;
  if (job.steps > 0) s.options.steps = job.steps;
  if (job.warmup >= 0) s.options.warmup_steps = job.warmup;
  if (job.drain >= 0) s.options.drain_steps = job.drain;
  // The jobs of a mix share the fabric: no collective has it to itself.
  s.options.collective_shortcut = false;
  auto seconds = price_plan(s.plan, s.profile, s.options);
  if (!seconds.is_ok()) return seconds.status().with_context(where);
  s.seconds = std::move(seconds).value();
  s.stride = symmetric_world(s.plan, s.profile, s.options, s.seconds) ? s.profile.devices_per_node : 1;
  return s;
}

}  // namespace clustertwin::sim::mix
