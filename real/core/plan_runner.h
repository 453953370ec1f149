#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/plan/plan.h"
#include "real/core/communicator.h"
#include "real/core/stream_set.h"
#include "real/core/tracer.h"

namespace clustertwin::real {

/// What a task body gets: the task, where and when it runs, and the group it
/// communicates in (collectives: its group on its stream's channel; send and
/// recv: the world on that channel).
struct TaskContext {
  const models::Plan& plan;
  const models::Task& task;
  int rank;
  int world_size;
  int step;
  Communicator& comm;
  Group* group;  // nullptr for tasks that do not communicate
};

/// A task's real work. Errors stop the run.
using TaskBody = std::function<Status(TaskContext&)>;

struct RunnerOptions {
  int steps = 1;
  /// Before each collective, the group's members compare what they are about
  /// to run (task, step, operation, bytes); a difference is reported with
  /// both task names instead of a hang or a silent wrong result.
  bool check_order = true;
};

/// Runs a plan (models/plan/plan.h) on this rank for real: one thread per
/// stream, each running its tasks in plan order, step after step, waiting
/// for the task's dependencies (same step and previous step, on any stream).
/// Collectives of a stream go through that stream's own process groups (one
/// channel per stream), so streams overlap without reordering each other's
/// collectives. Every task is traced.
///
///   compute  |fwd|     |bwd|          <- thread "compute"
///   comm        |a2a|       |ar|      <- thread "comm": its own c10d groups
///
/// On a GPU (the communicator's device) each thread also owns a CUDA stream,
/// a dependency across streams is a CUDA event, and a task's trace interval
/// is the device's, from CUDA events, with the host's launch interval kept in
/// host_ts_us / host_dur_us (stream_set.h).
class PlanRunner {
 public:
  PlanRunner(const models::Plan& plan, Communicator& comm, Tracer& tracer, RunnerOptions options);
  ~PlanRunner();

  /// The body for every task of `kind`, unless its cost key has one.
  void set_body(models::TaskKind kind, TaskBody body) { kind_bodies_[kind] = std::move(body); }
  /// The body for tasks with `cost_key`.
  void set_body(const std::string& cost_key, TaskBody body) { key_bodies_[cost_key] = std::move(body); }

  /// Creates the process groups (in plan order, on every rank), then runs
  /// all steps. Returns the first failure of any stream.
  Status run();

 private:
  struct State;
  Status prepare_groups();
  void wait_on_device(int step, const models::Task& task, int stream);
  Status run_stream(int stream, const std::vector<int>& tasks);
  Status check_order(const models::Task& task, int step, Group& group);
  const TaskBody* body_for(const models::Task& task) const;

  const models::Plan& plan_;
  Communicator& comm_;
  Tracer& tracer_;
  RunnerOptions options_;
  std::map<models::TaskKind, TaskBody> kind_bodies_;
  std::map<std::string, TaskBody> key_bodies_;
  std::vector<Group*> task_group_;  // per task id, this rank's group (or nullptr)
  std::unique_ptr<State> state_;
  std::unique_ptr<StreamSet> streams_;
};

/// Bodies that make any plan runnable for real without model code: compute
/// runs matrix multiplies of the task's FLOPs, collectives move the task's
/// bytes with the real c10d collective, copies and host work copy its bytes,
/// lookups gather its bytes of rows from a table. Buffers are allocated once
/// per task; data is seeded so runs repeat.
void set_synthetic_bodies(PlanRunner& runner, uint64_t seed);

}  // namespace clustertwin::real
