#pragma once

// One interface per twin: what a system's twin offers a program that runs
// jobs without knowing which system they are (sim mix, plan mix).
//
//   const Twin* twin = find_twin("flexmarl");               // the registry: common/systems.def
//   auto settings = twin->read_settings(entry, frame);      // the job's own fields of a config mapping
//   auto job = twin->prepare(**settings, profile, frame);   // checked, sized, priced: no engine yet
//   ...in the child process that owns the engine:
//   auto run = (*job)->run_on(view);                        // a platform, or a placed view of a cluster's
//   run->start(); engine.run();
//   run->check_complete(); run->result(); run->write_trace(path);
//
// A twin is either a step plan that sim/core runs (PlanJob, sim/core/plan_job.h:
// NestPipe's) or actors of its own (FlowTrain's orchestrator, FlexMARL's);
// the caller asks both the same questions.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/field_reader.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim {

class Platform;

/// A job's run on one platform: its actors in the current engine.
class TwinRun {
 public:
  virtual ~TwinRun() = default;
  /// Creates the job's actors in the current engine, starting now.
  virtual void start() = 0;
  /// After the engine ran: the job's error, or Internal when it did not finish its steps.
  virtual Status check_complete() const = 0;
  /// Its step times (after its warm-up) and, where the twin keeps them, compute and communication.
  virtual SimResult result() const = 0;
  /// Writes its simulated trace to `path` (Chrome trace JSON, traces/FORMAT.md).
  virtual Status write_trace(const std::string& path) = 0;
};

/// A job of a twin ready to run: its settings checked against its profile,
/// its sizes and costs worked out outside any engine.
class TwinJob {
 public:
  virtual ~TwinJob() = default;
  /// What the job runs, for tables: "nestpipe/nestpipe", "flowtrain/disagg-sync", "flexmarl/marti".
  virtual std::string runs() const = 0;
  /// The options it runs with: workers, steps, warm-up and drain, seed, group merging.
  virtual const SimOptions& options() const = 0;
  /// Its run on `view` (ranks 0..workers-1 of a platform of its own, or of a
  /// cluster's placed view: Platform::place), not started. The job and the
  /// view must outlive the run.
  virtual std::unique_ptr<TwinRun> run_on(Platform& view) const = 0;
};

/// A twin's settings of one job, read from a config mapping: opaque to the
/// program, which hands them back to the twin that read them.
class TwinSettings {
 public:
  virtual ~TwinSettings() = default;
};

/// What a program fixes of every job, whatever its system: its size, seed
/// and steps, and where it was written (for messages).
struct JobFrame {
  std::string file;   // the config file ("mix.yaml")
  std::string field;  // the job's mapping in it ("jobs[2]")
  std::string name;   // the job's name ("rec")
  int workers = 0;
  uint64_t seed = 0;
  int steps = -1;  // -1: the twin's default, as for warmup and drain
  int warmup = -1;
  int drain = -1;
  /// Other jobs share the platform: no collective may take the fabric to
  /// itself (SimOptions::collective_shortcut off).
  bool shared_fabric = false;

  /// "mix.yaml: field 'jobs[2].mode': ": how a twin's message names one of the job's fields.
  std::string where(std::string_view key) const;
  /// "mix.yaml: jobs[2] ('rec')": the job, as context of a message from below.
  std::string job() const;
  /// `options` with the frame's workers, seed and steps (those it gives)
  /// and, on a shared fabric, no collective shortcut.
  SimOptions apply(SimOptions options) const;
  /// For a twin whose first step is its warm-up and that has no drain
  /// (FlowTrain's, FlexMARL's): an error naming warmup or drain, through
  /// `entry`, when the frame gives either.
  Status check_first_step_warms_up(cluster::FieldReader& entry, std::string_view system) const;
  /// The options of such a twin's job: the frame's workers and seed,
  /// `steps`, one warm-up step, no drain.
  SimOptions first_step_warmup_options(int steps) const;
};

/// A system's twin, found through the registry.
class Twin {
 public:
  virtual ~Twin() = default;
  /// The system's name in common/systems.def ("flexmarl").
  virtual std::string_view name() const = 0;
  /// Reads the twin's own fields of a job's mapping (`entry`: its common
  /// keys, name, workers, steps and the like, already read, so that
  /// `entry.finish()` afterwards names any key nobody knows). Absent fields
  /// take the twin's `sim NAME` defaults. InvalidArgument naming the file,
  /// the field and the value.
  virtual StatusOr<std::shared_ptr<const TwinSettings>> read_settings(cluster::FieldReader& entry,
                                                                      const JobFrame& frame) const = 0;
  /// The samples one worker takes per step (a samples/s target's batch), 0
  /// when the job's batch is not per worker.
  virtual int batch_per_worker(const TwinSettings& settings) const = 0;
  /// Checks `settings` on `profile` cheaply (closed forms, no sizing of the
  /// workload): what a program checks before it runs anything.
  /// InvalidArgument naming the file and field.
  virtual Status check(const TwinSettings& settings, const cluster::ClusterProfile& profile,
                       const JobFrame& frame) const = 0;
  /// Checks, sizes and prices a job of `settings` on `profile` (the cluster
  /// as the job's nodes see it) without simulating. InvalidArgument naming
  /// the file and field (frame.where) for a setting the profile cannot run.
  virtual StatusOr<std::unique_ptr<TwinJob>> prepare(const TwinSettings& settings,
                                                     const cluster::ClusterProfile& profile,
                                                     const JobFrame& frame) const = 0;
};

/// Runs `job` alone on a platform of its own (`profile`'s first
/// job.options().workers devices), in a child process: SimGrid allows one
/// engine per process. Its result's wall_s is the host time the run took;
/// the job's error, or Internal when the run did not finish its steps.
StatusOr<SimResult> run_alone(const TwinJob& job, const cluster::ClusterProfile& profile);

/// The twin of `system` (a name of common/systems.def), or nullptr.
const Twin* find_twin(std::string_view system);
/// The registered twins' names in registry order ("nestpipe, flexmarl, flowtrain").
std::string twin_list();

}  // namespace clustertwin::sim
