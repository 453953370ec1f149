// PlanRunImpl, the state of one plan run (PlanRun, plan_run.h, holds one) and
// the parts of it (internal to sim/core). Its members are defined by concept, one file each:
//
//   plan_run.cpp             the stream actors: start, dependencies, the loop over steps and tasks
//   plan_run_tasks.cpp       executing a compute, lookup, host or copy task
//   plan_run_collective.cpp  collectives: members meeting, then the last one running it for all
//   plan_run_record.cpp      the events of finished tasks, the run's result and its trace
#pragma once

#include <cstdint>
#include <map>
#include <simgrid/s4u.hpp>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"
#include "sim/core/collective_shortcut.h"
#include "sim/core/sim_options.h"
#include "traces/event.h"

namespace clustertwin::sim {

class Platform;

class PlanRunImpl {
  // A collective in flight: who has arrived, and when it is over.
  struct Instance {
    int expected = 0;
    int arrived = 0;
    bool done = false;
    simgrid::s4u::MutexPtr mutex = simgrid::s4u::Mutex::create();
    simgrid::s4u::ConditionVariablePtr cv = simgrid::s4u::ConditionVariable::create();
  };

  // Per-rank completion flags of (step, task), and a condition to wait on them.
  struct RankState {
    std::vector<std::vector<char>> done;      // [step][task]
    std::vector<std::vector<char>> launched;  // [step][task], on a stream with a launch queue (launch_loop)
    simgrid::s4u::MutexPtr mutex = simgrid::s4u::Mutex::create();
    simgrid::s4u::ConditionVariablePtr cv = simgrid::s4u::ConditionVariable::create();
  };

  // A collective instance: (task id, step, first member, 0) for a group
  // collective, (-1 - tag, step, sender, receiver) for a send/recv pair.
  using InstanceKey = std::tuple<int, int, int, int>;

 public:
  // `stride` 1 simulates every rank; devices_per_node simulates each node's first (symmetric mode).
  PlanRunImpl(const models::Plan& plan, Platform& platform, const SimOptions& options, Fidelity fidelity,
              std::vector<std::vector<double>> seconds, int stride);

  void start();
  Status check_complete() const;

  std::vector<traces::Event>& events() { return events_; }
  const std::vector<double>& step_end() const { return step_end_; }
  const models::Plan& plan() const { return plan_; }
  const SimOptions& options() const { return options_; }
  Fidelity fidelity() const { return fidelity_; }
  int stride() const { return stride_; }
  int64_t priced_once() const { return priced_once_; }

 private:
  // plan_run.cpp
  bool deps_done(int rank, int step, const models::Task& t) const;
  void stream_loop(int rank, int stream, const std::vector<int>& tasks);
  // A GPU node's stream whose tasks are launched (cluster::HostSide, Task::launches): the host thread launches
  // them in order and goes on (launch_loop); the device runs each once launched and its dependencies are done
  // (stream_loop, waiting for the launch too).
  void launch_loop(int rank, const std::vector<int>& tasks);
  bool queued(int rank, const std::vector<int>& tasks) const;

  // plan_run_tasks.cpp
  void execute(int rank, int step, const models::Task& t);

  // plan_run_collective.cpp
  void collective(int rank, int step, const models::Task& t);
  void run_network_collective(const models::Task& t, const InstanceKey& key, const std::vector<int>& members);
  // A collective's wait on shared cores for its threads to run (calibrators/step_wait.h): its latency steps
  // times the profile's step_wait at the ranks on `rank`'s node; 0 without one.
  double os_wait(const models::Task& t, int members, int rank) const;
  // A collective of one member without a cost: the local copy it makes (an out-of-place op), else nothing.
  double local_copy_seconds(const models::Task& t, int rank) const;
  // The bytes the network carries for a collective: the task's, times the profile's factor for the op.
  int64_t effective_bytes(const models::Collective& c, int64_t bytes, int group_size) const;
  /// Symmetric mode: the shifts from a collective's members to the same collective of the node's other,
  /// unsimulated devices (none outside symmetric mode, and for groups of whole nodes).
  std::vector<int> sibling_shifts(const models::Collective& c) const;

  // plan_run_record.cpp
  void record(int rank, int stream, int step, const models::Task& t, double start, double end);

  const models::Plan& plan_;
  Platform& platform_;
  const SimOptions& options_;
  Fidelity fidelity_;
  std::vector<std::vector<double>> seconds_;  // [task][rank] nominal seconds; -1: transfers over the network
  std::vector<char> on_cores_;                // [task]: a priced copy or collective that is CPU work on shared cores
  std::vector<int> ranks_on_node_;            // [node]: the run's ranks placed there
  int stride_ = 1;                            // simulated ranks: 0, stride, 2 stride, ...
  std::vector<RankState> ranks_;
  std::map<InstanceKey, Instance> instances_;
  std::map<InstanceKey, int64_t> send_bytes_;
  bool alone_ = false;       // exclusive_network: one collective on the fabric at a time
  CollectivePrices prices_;  // network seconds of the distinct collectives so far, when alone_
  int64_t priced_once_ = 0;  // collective runs that took a price from prices_
  std::vector<traces::Event> events_;
  std::vector<double> step_end_;
  std::map<std::tuple<int, int, int>, std::pair<double, double>> launches_;  // (rank, step, task) -> host interval
};

}  // namespace clustertwin::sim
