#pragma once

// Capacity planning over a mix (`clustertwin plan mix`): the fewest nodes,
// and a placement, on which every job of a mix meets its throughput target
// while they share the fabric.
//
//   1. alone   each job with a target and no workers is sized alone on the
//              cluster (packed from node 0) by the single-system search
//              (sim/core/capacity_search.h): the fewest workers, one node
//              apart, that meet its target, and the count one node down,
//              which misses. The sum of these and the fixed jobs' nodes is
//              a lower bound: sharing the fabric never makes a job faster.
//   2. mix     those sizes together, under each placement policy of the
//              set (packed, spread, random, isolated); the first policy
//              under which every target holds is the answer.
//   3. grow    where contention makes jobs miss, each sized job that misses
//              under the best policy (the one whose worst job is closest to
//              its target) is grown, one candidate per job: by one node, or
//              to what its per-worker rate in the mix proves it needs; every
//              candidate under every policy (`isolated` gives each job pods
//              of its own, which avoids the contended uplinks when the
//              cluster has the nodes to spare). The fewest nodes that meet
//              every target win; else the closest candidate is grown again.
//   4. check   one node fewer, under every policy, must miss: every split of
//              those nodes among the sized jobs (each at least its alone
//              size) when there are few, else each grown job one node
//              down; should one meet, it is the answer and the check repeats.
//
// The answer is minimal when it equals the lower bound; above it, no split
// of one node fewer meets every target under any policy tried (or, with
// many splits, no grown job can give up a node). docs/mix.md says what else
// the search assumes.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/cluster/cluster_profile.h"
#include "sim/mix/mix_run.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {

struct MixPlanOptions {
  /// Placement policies to try, in order of preference: packed, spread, random, isolated.
  std::vector<std::string> placements = {"packed", "spread", "isolated"};
  uint64_t seed = 0;  // random placement's seed (and the jobs'); the mix file's unless seed_given
  bool seed_given = false;
  int parallel = 2;   // simulations at a time
  int top_links = 5;  // contended links reported per mix
  /// Called with one line per simulated point (a job alone, a mix), for stderr.
  std::function<void(const std::string& line)> progress;
};

/// A job sized alone (a target and no workers), or a job of fixed size.
struct AloneSize {
  bool searched = false;   // sized by the search; else the file's workers
  int workers = 0;         // the fewest workers that meet the target alone (or the file's)
  double throughput = 0;   // alone at those workers, in the target's unit (searched jobs)
  bool has_below = false;  // one node down was simulated, and misses
  int below_workers = 0;
  double below_throughput = 0;
  int points = 0;  // worker counts simulated
};

/// One mix the planner ran: a worker count per job under one placement policy.
struct MixTry {
  std::vector<int> workers;  // per job, in mix order
  int nodes = 0;             // the jobs' nodes together
  int pod_nodes = 0;         // placed: the nodes of the pods the jobs use, idle ones included
  std::string placement;
  bool placed = false;  // false: the policy cannot place these jobs (`why` says why); nothing simulated
  bool meets = false;   // every job with a target meets it in the mix
  double worst = 0;     // the least throughput-in-the-mix / target over jobs with a target (1 with none)
  std::string why;      // every job that misses ("a 6,246 of 7,000 samples/s; b ..."), or why not placed
  MixResult result;     // placed: the mix as `sim mix` reports it
};

struct MixPlan {
  std::string file;
  std::string profile;
  int profile_nodes = 0;
  int devices_per_node = 0;
  std::vector<std::string> placements;
  uint64_t seed = 0;
  std::vector<JobSpec> jobs;     // the file's
  std::vector<AloneSize> alone;  // per job
  int lower_bound_nodes = 0;     // the alone sizes' nodes together: no fewer can meet every target
  bool feasible = false;
  std::string why_not;             // not feasible: one clause
  MixTry answer;                   // feasible: the fewest nodes, the first policy (in order) that meets
  std::vector<MixTry> at_answer;   // every policy at the answer's workers
  std::vector<MixTry> below;       // the check: one node fewer, every policy (all miss)
  bool below_every_split = false;  // `below` holds every split of one node fewer (else each grown job a node down)
  std::vector<MixTry> tries;       // every mix simulated or refused, in the order run
  int simulations = 0;             // SimGrid simulations run (alone searches and mixes)
};

/// The policies plan_mix accepts, for messages: "packed, spread, random, isolated".
std::string plan_placement_list();

/// The `isolated` policy: jobs with explicit nodes keep them; each other job,
/// in mix order, takes consecutive nodes from the first node of the lowest
/// pod no job has touched, and its pods are then all its own (nodes it
/// leaves in its last pod stay idle). Jobs whose nodes fit in one pod share
/// no switch link. nullopt when the pods run out; the mix must have passed
/// check_mix.
std::optional<std::vector<std::vector<int>>> isolated_placement(const MixSpec& mix,
                                                                const cluster::ClusterProfile& profile);

/// Sizes `job` (a samples/s target, no workers) alone on the empty cluster,
/// packed from node 0, with the search of `plan SYSTEM`
/// (sim/core/capacity_search.h) over whole nodes: `out` gets the fewest
/// workers that meet the target and the count one node down, which misses.
/// When no count of the profile meets it, out->workers is 0 and `why_not`
/// says so. Errors of the simulations pass through.
Status size_job_alone(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile,
                      const MixPlanOptions& options, uint64_t seed, AloneSize* out, std::string* why_not);

/// Plans `mix` on `profile` (the mix must have been read by read_mix; jobs
/// without workers have a samples/s target). InvalidArgument for an unknown
/// or repeated policy, or a mix whose fixed jobs fail check_mix; errors of
/// the simulations pass through. A plan that is not feasible is a result
/// (feasible false, why_not), not an error.
StatusOr<MixPlan> plan_mix(const MixSpec& mix, const cluster::ClusterProfile& profile, const MixPlanOptions& options);

/// The plan as JSON (deterministic: same inputs, same bytes) and as a table.
std::string mix_plan_json(const MixPlan& plan);
std::string mix_plan_table(const MixPlan& plan);

}  // namespace clustertwin::sim::mix
