#pragma once

// One job's actors in a shared engine (sim mix): the streams of its step
// plan (sim/core/plan_run.h), or FlowTrain's own orchestrator
// (sim/flowtrain/flowtrain_job.h). The mix runner starts every job's run on
// the job's placed view of one platform, runs the engine once, and asks each
// run the same questions, whatever runs inside.

#include <memory>
#include <string>

#include "common/status.h"
#include "sim/core/platform.h"
#include "sim/core/simulator.h"
#include "sim/mix/job_setup.h"

namespace clustertwin::sim::mix {

class JobRun {
 public:
  /// The run of `job` on `view` (the job's Platform::place view), not
  /// started; `job` and `view` must outlive it.
  static std::unique_ptr<JobRun> make(const JobSetup& job, Platform& view);
  virtual ~JobRun() = default;

  /// Creates the job's actors in the current engine, starting now.
  virtual void start() = 0;
  /// After the engine ran: the job's error, or Internal when it did not finish its steps.
  virtual Status check_complete() const = 0;
  /// Its step times (after its warm-up) and, where its twin keeps them, compute and communication.
  virtual SimResult result() const = 0;
  /// Writes its simulated trace to `path` (Chrome trace JSON, traces/FORMAT.md).
  virtual Status write_trace(const std::string& path) = 0;
};

}  // namespace clustertwin::sim::mix
