#pragma once

// Capacity planning: the smallest configuration that meets a throughput
// target. A system offers families of configurations (a variant, framework
// or mode with its split) and a ladder of worker counts; the twin evaluates
// points on request.
//
// The search leans on what holds for data-parallel training: a family's
// throughput does not fall as workers are added, and its per-worker
// throughput (rate) does not rise. So a point that misses the target at N
// workers with rate r proves that no count below T / r can meet it. Each
// family starts from its one-node rate, probes the first count its bound
// allows, and raises the bound with every miss: when efficiency changes
// slowly the first or second probe meets the target, and the bound proves
// the count below cannot. Families advance in lockstep, one probe each per
// round, so a round's points are simulated together; a family whose bound
// already exceeds the `keep` best answers found is not searched further.
// The search steers by cheap estimates; the answer in front is then settled
// with exact runs (moved up while it misses, with the same bound), and its
// neighbour one node down is run exactly too, so the best configuration
// carries evidence that rests on neither the estimate nor the assumption.
// Runner-ups are reported with their estimates.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace clustertwin::sim {

/// One configuration the twin evaluated.
struct CapacityPoint {
  int family = 0;  // index into the families
  int workers = 0;
  std::string detail;     // what the family chose at this count (a split, a layout), "" if nothing
  double step_s = 0;      // one training step
  double throughput = 0;  // the system's unit (samples/s)
  double efficiency = 0;  // per-worker throughput against the family's at the ladder's first count
  bool exact = false;     // from an exact run (else the search's estimate)
};

/// Evaluates (family, workers) points, results in the same order; it may run
/// them in parallel. Only step_s, throughput and detail need be set. `exact`
/// false asks for the cheap estimate the search steers by (fewer steps, a
/// coarser network model); true for the figures the answer reports, the same
/// as the system's own simulation command prints.
using CapacityEvaluator =
    std::function<StatusOr<std::vector<CapacityPoint>>(const std::vector<std::pair<int, int>>& points, bool exact)>;

struct CapacityQuery {
  std::vector<std::string> families;  // names, for the answer's messages
  std::vector<int> ladder;            // candidate worker counts, ascending, at least one
  /// Whether a family can run at a count at all (a layout fits the devices'
  /// memory, the count divides as the family needs); cheap, no simulation.
  /// A family's own ladder is the counts where it fits: its reference rate is
  /// at the first of them and "one node down" means its previous one. Empty:
  /// every family fits everywhere.
  std::function<bool(int family, int workers)> fits;
  double target_throughput = 0;  // > 0
  double min_efficiency = 0;     // in [0, 1]; 0 for no bound
  int keep = 4;                  // answers wanted: the best and the runner-ups
  std::string noun = "workers";  // what the ladder counts, for the reasons' wording
  /// Called after each round: the round (1-based) and the points simulated so far.
  std::function<void(int round, int evaluated)> progress;
};

/// A family's outcome.
struct CapacityFamilyResult {
  enum class Kind {
    kMeets,      // answer: the fewest workers that meet the target
    kTooFew,     // the target needs more workers than the ladder has
    kTooLow,     // it meets the target only below the efficiency asked
    kOutranked,  // not searched to the end: its bound exceeds the kept answers
    kNoFit,      // it fits at no count of the ladder
  };
  int family = 0;
  Kind kind = Kind::kMeets;
  CapacityPoint answer;    // kMeets: the answer; else the last point simulated
  int min_workers = 0;     // kTooFew, kOutranked: no fewer workers can meet the target
  bool has_below = false;  // the ladder count just below the answer was simulated
  CapacityPoint below;
  std::string why_not;  // not kMeets: the reason, one clause
  bool feasible() const { return kind == Kind::kMeets; }
};

struct CapacityAnswer {
  /// Families that meet the target first, fewest workers then highest
  /// throughput; then the others, the closest first.
  std::vector<CapacityFamilyResult> families;
  int evaluated = 0;  // distinct points simulated (estimates and exact runs)
  int exact = 0;      // of which exact runs
  int rounds = 0;
  int space = 0;  // the points of every family's ladder: what full enumeration would simulate
  /// Every point simulated, by family and count, an estimate before an exact
  /// run at the same count; efficiency against the family's first count of
  /// the same kind of run (0 when that was not run).
  std::vector<CapacityPoint> points;
  bool feasible() const { return !families.empty() && families.front().feasible(); }
};

/// InvalidArgument naming the field of CapacityQuery (target_throughput,
/// min_efficiency) for a target that is not a positive number or an
/// efficiency bound outside [0, 1] (a command checks these before its slow
/// preparations and says them with its flags; search_capacity checks them
/// again).
Status check_capacity_target(double target_throughput, double min_efficiency);

/// InvalidArgument for an empty or unsorted ladder, a target <= 0 or an
/// efficiency bound outside [0, 1]; otherwise the search's answer (errors of
/// the evaluator pass through).
StatusOr<CapacityAnswer> search_capacity(const CapacityQuery& query, const CapacityEvaluator& evaluate);

/// Worker counts from one node to `max_workers`, one node apart; a single
/// count below one node when max_workers is less than a node.
std::vector<int> node_ladder(int devices_per_node, int max_workers);

}  // namespace clustertwin::sim
