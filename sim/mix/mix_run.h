#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/core/simulator.h"
#include "sim/mix/mix_spec.h"
#include "sim/mix/resilience.h"

namespace clustertwin::sim::mix {

/// How to run a mix.
struct MixOptions {
  std::string placement;  // packed, spread or random; "" for the mix file's
  uint64_t seed = 0;      // random placement's seed (and the traces'); the mix file's unless set
  bool seed_given = false;
  int parallel = 2;       // simulations at a time (the mix and each job alone), each in its own process
  std::string trace_dir;  // a trace per job, JOB.json in the mix and JOB-alone.json alone ("" for none)
  int top_links = 5;      // contended links reported
};

/// One job: alone on its nodes (the same platform, no other job) and in the mix.
struct JobResult {
  std::string name;
  std::string runs;  // "data_parallel", "plan FILE", "nestpipe/VARIANT"
  int workers = 0;
  std::vector<int> nodes;
  int pods = 0;  // first-level switch groups its nodes span (sim/mix/placement.h)
  SimResult alone;
  SimResult mixed;
  double slowdown = 0;  // mixed.step_time_s / alone.step_time_s
  /// Under the mix's failures, for a job with a checkpoint policy: its
  /// timelines with steps of its step time in the mix.
  bool has_resilience = false;
  JobResilience resilience;
};

/// A link that carried several jobs' traffic in the mix.
struct ContendedLink {
  std::string link;
  double bandwidth = 0;                                      // bytes/s
  double bytes = 0;                                          // all jobs
  double utilization = 0;                                    // bytes / (bandwidth x the mix's simulated time)
  std::vector<std::pair<std::string, double>> bytes_by_job;  // jobs in mix order, those that used it
};

struct MixResult {
  std::string file;
  std::string profile;
  std::string placement;
  uint64_t seed = 0;
  std::vector<JobResult> jobs;
  FailureSpec failures;                  // the mix's
  double makespan_s = 0;                 // simulated time of the mix (the last job's last step)
  int shared_links = 0;                  // links that carried two or more jobs' traffic
  std::vector<ContendedLink> contended;  // the busiest of them, at most MixOptions::top_links
  double wall_s = 0;
};

/// Runs every job of `mix` in one SimGrid simulation on one platform of
/// `profile` (its whole cluster), each job on its own nodes with its own
/// actors and collectives, all flows sharing the fabric's links; and each
/// job alone on the same platform and nodes, for its slowdown. Flows'
/// bytes are counted per link and job (sim/core/link_tally.h). The mix
/// must have passed check_mix against `profile`. InvalidArgument for a job
/// whose plan cannot be built or run (naming the file and the job's
/// field); Internal when a simulation fails.
StatusOr<MixResult> run_mix(const MixSpec& mix, const cluster::ClusterProfile& profile, const MixOptions& options);

/// The result as one JSON object (deterministic: same inputs, same bytes; wall time left out).
nlohmann::ordered_json mix_result_document(const MixResult& result);
/// The same as text, with a trailing newline (`sim mix --json`).
std::string mix_result_json(const MixResult& result);
/// The result as a table for a terminal.
std::string mix_result_table(const MixResult& result);

}  // namespace clustertwin::sim::mix
