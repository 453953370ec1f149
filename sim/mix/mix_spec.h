#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/core/twin.h"
#include "sim/mix/job_target.h"

namespace clustertwin::sim::mix {

/// What one job of a mix runs.
///
///   data_parallel  a synthetic data-parallel step: `compute_s` of compute,
///                  then an all-reduce of `allreduce_bytes` over all workers
///                  (closed forms, and a stand-in for any DDP job)
///   plan           a step plan file, as `clustertwin sim plan` takes
///   system         a system's twin (sim/core/twin.h), found by name in the
///                  registry: its own fields of the job's entry are its
///                  `settings` (nestpipe: variant; flowtrain: mode, model,
///                  ...; flexmarl: framework, agents, ...), read by the twin
struct JobSpec {
  enum class Kind { kDataParallel, kPlan, kSystem };
  std::string name;
  Kind kind = Kind::kDataParallel;
  double compute_s = 0;
  int64_t allreduce_bytes = 0;
  std::string plan_file;  // resolved against the mix file's folder
  std::string system;     // a name of common/systems.def
  /// A system job's own fields, as its twin read them (find_twin(system)).
  std::shared_ptr<const TwinSettings> settings;
  int workers = 0;   // 0: not given, a job with a target that `clustertwin plan mix` sizes
  JobTarget target;  // `target:`, for `clustertwin plan mix` (sim/mix/job_target.h)
  /// Steps simulated, before and after the measured window; -1: the kind's
  /// default (6, 2, 1; NestPipe's 12, 4, 3; FlowTrain's 3 and FlexMARL's
  /// 4, their first the warm-up, and no drain).
  int steps = -1;
  int warmup = -1;
  int drain = -1;
  std::vector<int> nodes;  // explicit placement (node indices of the profile); empty: by the policy
  std::string field;       // "jobs[2]": where the job is in the file, for messages
  std::string file;        // the mix file, for messages
  /// Checkpointing (`checkpoint:`), for the failure timeline; absent when
  /// checkpoint_every is empty. The cost is `cost`, or state_bytes /
  /// storage_bandwidth.
  std::vector<double> checkpoint_every;  // seconds of work between checkpoints: one, or several to sweep
  double checkpoint_cost_s = 0;
  double restart_s = 0;
};

/// Failures of the cluster's nodes (`failures:`): exponential with a mean
/// time between failures per node (seeded by the mix's seed), or at listed
/// (time, node) pairs; jobs' timelines run for `horizon_s`.
struct FailureSpec {
  bool present = false;
  double node_mtbf_s = 0;                      // 0 when failures are listed
  std::vector<std::pair<double, int>> listed;  // (time s, node)
  double horizon_s = 30 * 86400.0;
};

/// What the job's twin is told of it: its file and field, name, workers,
/// steps, and `seed`; a mix's jobs share the fabric.
JobFrame job_frame(const JobSpec& job, uint64_t seed);

/// A job mix file (docs/mix.md has the schema).
struct MixSpec {
  std::string file;     // the path it was read from, for messages
  std::string profile;  // a shipped profile's name or a path (resolved against the mix file's folder)
  std::string placement = "packed";
  uint64_t seed = 0;
  std::vector<JobSpec> jobs;
  FailureSpec failures;
};

/// Parses a mix from YAML text; `file` names it in errors, which are one
/// line naming the field and the value ("mix.yaml: field 'jobs[1].workers':
/// -4 must be >= 1"), and `dir` resolves relative paths. Unknown keys are
/// errors.
StatusOr<MixSpec> parse_mix(const std::string& yaml_text, const std::string& file, const std::string& dir);

/// Reads and parses a mix file.
StatusOr<MixSpec> read_mix(const std::string& path);

/// Checks the mix against its profile: each job's worker count (a multiple
/// of a node's devices, or fewer than one node's), explicit node lists
/// (in range, the size the workers need, no node in two jobs), and that all
/// jobs fit the profile's nodes together; every job must have its workers
/// (a job with only a target is for `clustertwin plan mix`, which sizes it).
/// InvalidArgument names the file and field.
Status check_mix(const MixSpec& mix, const cluster::ClusterProfile& profile);

/// The nodes `workers` workers take on `profile` (a node per devices_per_node workers).
int nodes_needed(const cluster::ClusterProfile& profile, int workers);

}  // namespace clustertwin::sim::mix
