// What a plan run leaves behind: an event per finished task (the trace's
// one-to-one image of the plan), the step ends, the metrics of the finished
// run (PlanRun::result), and the trace file (write_run_trace).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "common/version.h"
#include "models/plan/task_event.h"
#include "sim/core/metrics.h"
#include "sim/core/plan_run.h"
#include "sim/core/plan_run_impl.h"
#include "sim/core/platform.h"
#include "traces/trace_writer.h"

namespace clustertwin::sim {
namespace {

using models::Task;

}  // namespace

void PlanRunImpl::record(int rank, int stream, int step, const Task& t, double start, double end) {
  int64_t group_size = 0, peer = -1;
  if (t.collective) {
    if (t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv) {
      peer = ((rank + t.collective->peer_offset) % options_.workers + options_.workers) % options_.workers;
      group_size = 2;
    } else {
      group_size = models::group_size(t.collective->group, rank, options_.workers, platform_.devices_per_node());
    }
  }
  traces::Event e = models::task_event(t, rank, stream, step, start * 1e6, end * 1e6, group_size, peer);
  auto launch = launches_.find({rank, step, t.id});
  if (launch != launches_.end()) {  // a launched task: its host side, as a real GPU run records it
    e.host_ts_us = launch->second.first * 1e6;
    e.host_dur_us = (launch->second.second - launch->second.first) * 1e6;
  }
  events_.push_back(std::move(e));
  step_end_[step] = std::max(step_end_[step], end);
}

SimResult PlanRun::result(const cluster::ClusterProfile& profile) const {
  const models::Plan& plan = impl_->plan();
  const SimOptions& options = impl_->options();
  SimResult result;
  result.system = plan.system;
  result.variant = plan.variant;
  result.platform = profile.name;
  result.workers = options.workers;
  result.steps = options.steps;
  result.warmup_steps = options.warmup_steps;
  result.drain_steps = options.drain_steps;
  result.fidelity = impl_->fidelity();
  result.step_end_s = impl_->step_end();
  result.events = static_cast<int64_t>(impl_->events().size());
  result.simulated_workers = (options.workers + impl_->stride() - 1) / impl_->stride();
  result.collectives_priced_once = impl_->priced_once();
  auto peak = [&](const traces::Event& e) {
    const cluster::DeviceType& device = profile.device_type_of(static_cast<int>(e.rank));
    const std::string& dtype =
        plan.tasks[*e.task_id].dtype.empty() ? profile.default_dtype : plan.tasks[*e.task_id].dtype;
    auto it = device.peak_flops.find(dtype);
    return it == device.peak_flops.end() ? 0.0 : it->second;
  };
  compute_metrics(plan, impl_->events(), peak, options.breakdown, &result);
  return result;
}

Status write_run_trace(const models::Plan& plan, const cluster::ClusterProfile& profile, const SimOptions& options,
                       const SimResult& result, std::vector<traces::Event> events, const std::string& path) {
  // Events in a fixed order (rank, stream, start) so that traces are byte-identical across runs.
  std::stable_sort(events.begin(), events.end(), [](const traces::Event& a, const traces::Event& b) {
    return std::tie(a.rank, a.stream, a.ts_us) < std::tie(b.rank, b.stream, b.ts_us);
  });
  traces::Metadata m;
  m.source = traces::Source::kSim;
  m.system = plan.system;
  m.variant = plan.variant;
  m.world_size = options.workers;
  m.hardware = profile.name;
  m.config_json = nlohmann::ordered_json{{"steps", options.steps},
                                         {"warmup_steps", options.warmup_steps},
                                         {"fidelity", std::string(fidelity_name(result.fidelity))},
                                         {"simulated_workers", result.simulated_workers}}
                      .dump();
  m.seed = options.seed;
  m.clustertwin_version = std::string(version());
  m.streams = plan.streams;
  auto writer = traces::TraceWriter::create(path, m);
  if (!writer.is_ok()) return writer.status();
  for (const traces::Event& e : events)
    (*writer)->write(e);
  return (*writer)->close();
}

}  // namespace clustertwin::sim
