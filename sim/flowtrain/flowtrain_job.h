#pragma once

// FlowTrain's twin as a job on a platform someone else built, in an engine
// someone else runs. `sim flowtrain` builds the platform of the first N
// devices and runs one job on it; `sim mix` gives the job a placed view of
// the whole cluster's platform (Platform::place) and runs it beside other
// jobs, so that its embedding transfers and gradient reduce-scatters share
// the fabric with theirs. Both run the same actors, so a FlowTrain job alone
// on a view of the same devices gives `sim flowtrain`'s step times.
//
//   auto job = FlowTrainJob::prepare(setup, profile, mode);   // no engine yet
//   ...in the child process that owns the engine:
//   auto run = job->start(platform);                           // the orchestrator actor
//   engine.run();
//   run->status(); run->row(); run->step_ends_s();

#include <memory>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/flowtrain/flowtrain_row.h"
#include "sim/flowtrain/flowtrain_setup.h"

namespace clustertwin::sim {
class Platform;
}

namespace clustertwin::sim::flowtrain {

namespace detail {
struct Prepared;
class FlowTrainRun;
}  // namespace detail

/// A FlowTrain run started on a platform; what it reports once the engine
/// has run. Must not outlive the platform or the job it was started from.
class FlowTrainActors {
 public:
  ~FlowTrainActors();
  FlowTrainActors(const FlowTrainActors&) = delete;
  FlowTrainActors& operator=(const FlowTrainActors&) = delete;

  /// The run's error (a pool that stalls the flowtrain mode is
  /// InvalidArgument naming the pool), Internal when the engine stopped
  /// before every step ended, else OK.
  Status status() const;
  /// The measured steps as `sim flowtrain`'s row (wall time left 0).
  FlowTrainRow row() const;
  /// The simulated time each step ended, the first (warm-up) step included.
  const std::vector<double>& step_ends_s() const;

 private:
  friend class FlowTrainJob;
  FlowTrainActors();
  std::unique_ptr<detail::FlowTrainRun> run_;
  Status status_;
};

/// FlowTrain's twin ready to start: the setup checked against the profile
/// and the mode's layouts chosen by the allocator (closed forms, no
/// simulation). Copies share the prepared state.
class FlowTrainJob {
 public:
  /// Checks `setup` on `profile` (validate, naming settings with `name`) and
  /// chooses the layouts of `mode`; InvalidArgument when a setting is bad or
  /// no layout fits the devices' memory.
  static StatusOr<FlowTrainJob> prepare(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile,
                                        FlowTrainMode mode, const SettingName& name = {});

  /// Creates the orchestrator actor on `platform`'s rank 0, in the current
  /// engine: it runs setup.steps steps on ranks 0..workers-1 of the
  /// platform (encoder groups first, then the backbone replicas), starting
  /// at the engine's current time.
  std::unique_ptr<FlowTrainActors> start(Platform& platform) const;

  const FlowTrainSetup& setup() const;
  FlowTrainMode mode() const;

 private:
  explicit FlowTrainJob(std::shared_ptr<const detail::Prepared> prepared) : prepared_(std::move(prepared)) {}
  std::shared_ptr<const detail::Prepared> prepared_;
};

/// Whether `mode` can run `setup` on `profile`: the setup is valid and a
/// layout fits the devices' memory (the allocator's closed form, no
/// simulation); else the InvalidArgument run_flowtrain would return.
Status flowtrain_fits(const FlowTrainSetup& setup, const cluster::ClusterProfile& profile, FlowTrainMode mode);

}  // namespace clustertwin::sim::flowtrain
