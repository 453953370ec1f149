// The plan runner's actors: one per simulated rank and stream, each running
// its tasks of every step in plan order once their dependencies (this step's
// and the previous step's) are done on that rank. What a task does is
// plan_run_tasks.cpp's and plan_run_collective.cpp's; what is recorded of it,
// plan_run_record.cpp's.
#include "sim/core/plan_run.h"

#include <algorithm>
#include <cstdint>
#include <simgrid/s4u.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/collective_shortcut.h"
#include "sim/core/plan_run_impl.h"
#include "sim/core/platform.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;
using models::Task;

}  // namespace

PlanRunImpl::PlanRunImpl(const models::Plan& plan, Platform& platform, const SimOptions& options, Fidelity fidelity,
                         std::vector<std::vector<double>> seconds, int stride)
    : plan_(plan),
      platform_(platform),
      options_(options),
      fidelity_(fidelity),
      seconds_(std::move(seconds)),
      stride_(stride) {
  // On shared cores, a copy or collective priced by its cost key is CPU work; one priced by a fitted
  // network (collectives.OP.fit, a benchmark's wall time) is not.
  on_cores_.assign(plan.tasks.size(), 0);
  for (const Task& t : plan.tasks)
    on_cores_[t.id] = !t.cost_key.empty() && platform.profile().costs.count(t.cost_key) > 0;
  for (int rank = 0; rank < options.workers; ++rank) {
    const int node = platform.node_of(rank);
    if (node >= static_cast<int>(ranks_on_node_.size())) ranks_on_node_.resize(node + 1, 0);
    ++ranks_on_node_[node];
  }
  ranks_.resize(options.workers);
  for (int rank = 0; rank < options.workers; rank += stride_) {
    ranks_[rank].done.assign(options.steps, std::vector<char>(plan.tasks.size(), 0));
    // Launch flags only where launches are modelled (a GPU node's host): a 65,536-worker run keeps one set.
    if (platform.profile().host.modelled())
      ranks_[rank].launched.assign(options.steps, std::vector<char>(plan.tasks.size(), 0));
  }
  step_end_.assign(options.steps, 0.0);
  alone_ = exclusive_network(plan, options, platform.devices_per_node(), seconds_);
}

void PlanRunImpl::start() {
  const int world = options_.workers;
  for (int rank = 0; rank < world; rank += stride_) {
    for (int stream = 0; stream < static_cast<int>(plan_.streams.size()); ++stream) {
      std::vector<int> tasks;
      for (const Task& t : plan_.tasks) {
        if (t.stream == stream && models::runs_on(t, rank, world)) tasks.push_back(t.id);
      }
      if (tasks.empty()) continue;
      const std::string name = "r" + std::to_string(rank) + "." + plan_.streams[stream];
      if (queued(rank, tasks)) {
        sg::Actor::create(name + ".launch", platform_.host_pool(rank),
                          [this, rank, tasks] { launch_loop(rank, tasks); });
      }
      sg::Actor::create(name, platform_.device(rank),
                        [this, rank, stream, tasks] { stream_loop(rank, stream, tasks); });
    }
  }
}

Status PlanRunImpl::check_complete() const {
  int64_t missing = 0;
  for (int rank = 0; rank < options_.workers; rank += stride_) {
    for (int step = 0; step < options_.steps; ++step) {
      for (const Task& t : plan_.tasks) {
        if (models::runs_on(t, rank, options_.workers) && !ranks_[rank].done[step][t.id]) ++missing;
      }
    }
  }
  if (missing > 0) {
    return Status::internal("the simulation stopped with " + std::to_string(missing) +
                            " task runs not done (a deadlock in the plan)");
  }
  return Status::ok();
}

bool PlanRunImpl::deps_done(int rank, int step, const Task& t) const {
  const RankState& r = ranks_[rank];
  for (int d : t.deps) {
    if (models::runs_on(plan_.tasks[d], rank, options_.workers) && !r.done[step][d]) return false;
  }
  if (step > 0) {
    for (int d : t.prev_step_deps) {
      if (models::runs_on(plan_.tasks[d], rank, options_.workers) && !r.done[step - 1][d]) return false;
    }
  }
  return true;
}

bool PlanRunImpl::queued(int rank, const std::vector<int>& tasks) const {
  return platform_.host_pool(rank) != nullptr &&
         std::any_of(tasks.begin(), tasks.end(), [this](int id) { return plan_.tasks[id].launches > 0; });
}

void PlanRunImpl::launch_loop(int rank, const std::vector<int>& tasks) {
  RankState& r = ranks_[rank];
  const double launch = platform_.profile().host.launch;
  for (int step = 0; step < options_.steps; ++step) {
    for (int id : tasks) {
      const Task& t = plan_.tasks[id];
      const double start = sg::Engine::get_clock();
      // The host thread's launch calls, on the node's host cores; the device's queue takes the work.
      if (t.launches > 0 && launch > 0)
        sg::this_actor::exec_init(t.launches * launch * kWorkUnitsPerSecond)
            ->set_host(platform_.host_pool(rank))
            ->wait();
      launches_[{rank, step, id}] = {start, sg::Engine::get_clock()};
      {
        std::unique_lock<sg::Mutex> lock(*r.mutex);
        r.launched[step][id] = 1;
      }
      r.cv->notify_all();
      // The host waits for a task it does not launch (it runs it: host work, a task of the executors' kind)
      // and for a sync point.
      if (t.sync || t.launches == 0) {
        std::unique_lock<sg::Mutex> lock(*r.mutex);
        while (!r.done[step][id])
          r.cv->wait(lock);
      }
    }
  }
}

void PlanRunImpl::stream_loop(int rank, int stream, const std::vector<int>& tasks) {
  RankState& r = ranks_[rank];
  const bool launched = queued(rank, tasks);
  for (int step = 0; step < options_.steps; ++step) {
    for (int id : tasks) {
      const Task& t = plan_.tasks[id];
      {
        std::unique_lock<sg::Mutex> lock(*r.mutex);
        while (!deps_done(rank, step, t) || (launched && !r.launched[step][id]))
          r.cv->wait(lock);
      }
      const double start = sg::Engine::get_clock();
      execute(rank, step, t);
      const double end = sg::Engine::get_clock();
      record(rank, stream, step, t, start, end);
      {
        std::unique_lock<sg::Mutex> lock(*r.mutex);
        r.done[step][id] = 1;
      }
      r.cv->notify_all();
    }
  }
}

PlanRun::PlanRun(const models::Plan& plan, Platform& platform, const SimOptions& options, Fidelity fidelity,
                 std::vector<std::vector<double>> seconds, int stride)
    : impl_(std::make_unique<PlanRunImpl>(plan, platform, options, fidelity, std::move(seconds), stride)) {}

PlanRun::~PlanRun() = default;

void PlanRun::start() {
  impl_->start();
}

Status PlanRun::check_complete() const {
  return impl_->check_complete();
}

std::vector<traces::Event>& PlanRun::events() {
  return impl_->events();
}

}  // namespace clustertwin::sim
