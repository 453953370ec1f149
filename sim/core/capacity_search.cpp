#include "sim/core/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "common/text.h"

namespace clustertwin::sim {
namespace {

using Kind = CapacityFamilyResult::Kind;

// "workers" -> "worker", "devices" -> "device".
std::string singular(const std::string& noun) {
  return !noun.empty() && noun.back() == 's' ? noun.substr(0, noun.size() - 1) : noun;
}

// One family's search state, in ladder indices.
struct Search {
  int lo = -1;       // the largest simulated index that misses the target
  int hi = -1;       // the smallest simulated index that meets it (-1: none yet)
  double floor = 0;  // no count below this can meet the target (workers)
  int creeps = 0;    // consecutive misses whose bound reached no further than the next count
  bool done = false;
  Kind kind = Kind::kMeets;
  std::string why_not;
};

Status check(const CapacityQuery& q) {
  if (q.families.empty()) return Status::invalid_argument("plan: no configurations to search");
  if (q.ladder.empty()) return Status::invalid_argument("plan: no worker counts to search");
  for (size_t i = 0; i < q.ladder.size(); ++i) {
    if (q.ladder[i] < 1 || (i > 0 && q.ladder[i] <= q.ladder[i - 1]))
      return Status::invalid_argument("plan: worker counts must be positive and ascending");
  }
  CT_RETURN_IF_ERROR(check_capacity_target(q.target_throughput, q.min_efficiency));
  if (q.keep < 1) return Status::invalid_argument("plan: keep at least one answer");
  return Status::ok();
}

// The points simulated, by (family, ladder index); estimates and exact runs apart.
using Ladder = std::pair<int, int>;
using Points = std::map<Ladder, CapacityPoint>;

// Not meeting the target: outranked first (closest), then too low, too few, and those that fit nowhere.
int unmet_rank(Kind k) {
  switch (k) {
    case Kind::kMeets:
      return 0;
    case Kind::kOutranked:
      return 1;
    case Kind::kTooLow:
      return 2;
    case Kind::kTooFew:
      return 3;
    case Kind::kNoFit:
      return 4;
  }
  return 5;
}

// The answer's order: those that meet the target first, fewest workers, exact before estimated, highest throughput.
bool ranks_before(const CapacityFamilyResult& a, const CapacityFamilyResult& b) {
  if (a.feasible() != b.feasible()) return a.feasible();
  if (a.feasible() && a.answer.workers != b.answer.workers) return a.answer.workers < b.answer.workers;
  if (a.feasible() && a.answer.exact != b.answer.exact) return a.answer.exact;
  if (!a.feasible() && a.kind != b.kind) return unmet_rank(a.kind) < unmet_rank(b.kind);
  return a.answer.throughput > b.answer.throughput;
}

// One search (capacity_search.h): the ladder's estimates, the exact runs of
// the answer in front, the families' results and the check one step below.
class CapacitySearch {
 public:
  CapacitySearch(const CapacityQuery& q, const CapacityEvaluator& evaluate)
      : q_(q),
        evaluate_(evaluate),
        families_(static_cast<int>(q.families.size())),
        target_(q.target_throughput),
        ladder_(families_),
        search_(families_),
        settled_(families_, false) {}

  StatusOr<CapacityAnswer> run() {
    fit_ladders();
    CT_RETURN_IF_ERROR(estimate_ladders());
    CT_RETURN_IF_ERROR(confirm_front());
    std::vector<CapacityFamilyResult> results;
    for (int f = 0; f < families_; ++f)
      results.push_back(family_result(f));
    std::stable_sort(results.begin(), results.end(), ranks_before);
    CT_RETURN_IF_ERROR(check_one_below(results));
    answer_.families = std::move(results);
    collect_points();
    return answer_;
  }

 private:
  int top(int f) const { return static_cast<int>(ladder_[f].size()) - 1; }
  double rate_in(const Points& seen, int f, int i) const { return seen.at({f, i}).throughput / ladder_[f][i]; }
  // The first index of f's ladder at or above `workers` (top + 1 when none).
  int index_at_least(int f, double workers) const {
    return static_cast<int>(std::lower_bound(ladder_[f].begin(), ladder_[f].end(), workers - 1e-9) -
                            ladder_[f].begin());
  }
  int workers_of(int f) const { return ladder_[f][search_[f].hi]; }

  // Each family's ladder: the counts where it fits. Indices elsewhere are into these.
  void fit_ladders() {
    for (int f = 0; f < families_; ++f) {
      for (int w : q_.ladder) {
        if (!q_.fits || q_.fits(f, w)) ladder_[f].push_back(w);
      }
      answer_.space += static_cast<int>(ladder_[f].size());
    }
    for (int f = 0; f < families_; ++f) {
      if (!ladder_[f].empty()) continue;
      search_[f].done = true;
      search_[f].kind = Kind::kNoFit;
      search_[f].why_not = "fits at no count up to " + with_thousands(q_.ladder.back()) + " " + q_.noun;
    }
  }

  // Simulates the points of `wanted` not yet run of that kind, as one round.
  Status simulate(const std::vector<Ladder>& wanted, bool is_exact) {
    auto& seen = is_exact ? exact_ : estimated_;
    std::vector<std::pair<int, int>> points, indices;
    for (const auto& [f, i] : wanted) {
      if (seen.count({f, i}) || std::find(indices.begin(), indices.end(), std::pair{f, i}) != indices.end()) continue;
      indices.push_back({f, i});
      points.push_back({f, ladder_[f][i]});
    }
    if (points.empty()) return Status::ok();
    auto results = evaluate_(points, is_exact);
    if (!results.is_ok()) return results.status();
    if (results->size() != points.size()) return Status::internal("plan: the evaluator returned a wrong count");
    for (size_t k = 0; k < points.size(); ++k) {
      CapacityPoint p = (*results)[k];
      p.family = points[k].first;
      p.workers = points[k].second;
      seen[indices[k]] = p;
    }
    answer_.evaluated += static_cast<int>(points.size());
    if (is_exact) answer_.exact += static_cast<int>(points.size());
    ++answer_.rounds;
    if (q_.progress) q_.progress(answer_.rounds, answer_.evaluated);
    return Status::ok();
  }

  // A point's verdict on its family: a meet lowers the answer, a miss raises the bound.
  void record(const Points& seen, int f, int i) {
    Search& s = search_[f];
    if (seen.at({f, i}).throughput >= target_) {
      if (s.hi < 0 || i < s.hi) s.hi = i;
      return;
    }
    const double r = rate_in(seen, f, i);
    s.lo = std::max(s.lo, i);
    s.floor = std::max({s.floor, static_cast<double>(ladder_[f][i]) + 1, target_ / std::max(r, 1e-300)});
    if (q_.min_efficiency > 0 && r < q_.min_efficiency * rate_in(seen, f, 0)) {
      // Efficiency only falls from here, and fewer workers miss the target.
      s.done = true;
      s.kind = Kind::kTooLow;
      s.why_not = "efficiency " + format_number("%.1f", 100 * r / rate_in(seen, f, 0)) + "% already at " +
                  with_thousands(ladder_[f][i]) + " " + q_.noun + ", which miss the target";
    }
  }

  void too_few(const Points& seen, int f) {
    Search& s = search_[f];
    s.done = true;
    s.kind = Kind::kTooFew;
    s.why_not = "needs at least " + with_thousands(std::ceil(s.floor)) + " " + q_.noun + " (its rate at " +
                with_thousands(ladder_[f][s.lo]) + " " + q_.noun + ": " +
                format_number("%.4g", rate_in(seen, f, s.lo)) + " per " + singular(q_.noun) + ")";
  }

  // Phase 1, on estimates. Round 1: the first count of every family, its
  // reference rate; then one probe per open family per round.
  Status estimate_ladders() {
    std::vector<Ladder> probes;
    for (int f = 0; f < families_; ++f) {
      if (!search_[f].done) probes.push_back({f, 0});
    }
    while (!probes.empty()) {
      CT_RETURN_IF_ERROR(simulate(probes, false));
      for (const auto& [f, i] : probes)
        record(estimated_, f, i);
      probes.clear();
      const double cutoff = rank_cutoff();
      for (int f = 0; f < families_; ++f) {
        if (search_[f].done) continue;
        const int probe = next_probe(f, cutoff);
        if (probe >= 0) probes.push_back({f, probe});
      }
    }
    return Status::ok();
  }

  // The `keep`-th fewest workers among answers found: a family whose bound is above it cannot rank.
  double rank_cutoff() const {
    std::vector<int> found;
    for (int f = 0; f < families_; ++f) {
      if (search_[f].hi >= 0 && search_[f].kind == Kind::kMeets) found.push_back(ladder_[f][search_[f].hi]);
    }
    std::sort(found.begin(), found.end());
    return static_cast<int>(found.size()) >= q_.keep ? found[q_.keep - 1] : 1e300;
  }

  // An open family's next estimate: bisecting below its answer, or the first
  // count its bound allows; -1 when the family is settled instead.
  int next_probe(int f, double cutoff) {
    Search& s = search_[f];
    const int from = std::max(s.lo + 1, index_at_least(f, s.floor));
    if (s.hi >= 0) {
      if (from >= s.hi) {
        s.done = true;  // every count below the answer is ruled out
        return -1;
      }
      return s.hi - from <= 2 ? s.hi - 1 : (from + s.hi - 1) / 2;
    }
    if (from > top(f)) {
      too_few(estimated_, f);
      return -1;
    }
    if (ladder_[f][from] > cutoff) {
      s.done = true;
      s.kind = Kind::kOutranked;
      s.why_not = "needs at least " + with_thousands(ladder_[f][from]) + " " + q_.noun + "; not searched further";
      return -1;
    }
    // When the bound creeps (throughput that saturates: each miss proves
    // nothing past the next count), gallop: from the second such miss on,
    // probe 2, 4, 8, ... counts past the last miss, and bisect back down
    // once a probe meets the target; never past the kept answers' count,
    // where it could not rank anyway.
    int probe = from;
    if (s.lo >= 0 && from <= s.lo + 1) {
      if (++s.creeps >= 2) {
        probe = std::max(from, std::min(s.lo + (1 << std::min(s.creeps - 1, 20)), top(f)));
        while (probe > from && ladder_[f][probe] > cutoff)
          --probe;
      }
    } else {
      s.creeps = 0;
    }
    return probe;
  }

  // Phase 2: exact runs for the answer in front. Its count is run (with
  // its first count, its efficiency reference, and the count below, phase
  // 3's check); while it misses it moves up by the bound its exact rate
  // gives. Should it then fall behind another family's estimate, that one is
  // settled next, as is every family tied with it. The runner-ups keep their
  // estimates.
  Status confirm_front() {
    std::vector<int> kept;
    for (int f = 0; f < families_; ++f) {
      if (search_[f].kind == Kind::kMeets && search_[f].hi >= 0) kept.push_back(f);
    }
    for (int front = next_front(kept); front >= 0; front = next_front(kept)) {
      CT_RETURN_IF_ERROR(settle(front));
      settled_[front] = true;
    }
    return Status::ok();
  }

  // The fewest workers any kept family meets the target with; an unsettled
  // family there is settled next (the highest estimate first), so that
  // families tied at the front are compared on exact runs. -1 when none is left.
  int next_front(const std::vector<int>& kept) const {
    int fewest = -1;
    for (int f : kept) {
      if (search_[f].kind == Kind::kMeets && (fewest < 0 || workers_of(f) < fewest)) fewest = workers_of(f);
    }
    int front = -1;
    for (int f : kept) {
      if (search_[f].kind != Kind::kMeets || settled_[f] || workers_of(f) != fewest) continue;
      if (front < 0 ||
          estimated_.at({f, search_[f].hi}).throughput > estimated_.at({front, search_[front].hi}).throughput)
        front = f;
    }
    return front;
  }

  // Runs the front family's answer exactly, moving it up while it misses.
  Status settle(int front) {
    Search& s = search_[front];
    s.lo = -1;
    s.floor = 0;
    s.done = false;
    std::vector<Ladder> probes = {{front, 0}, {front, s.hi}};
    if (s.hi > 0) probes.push_back({front, s.hi - 1});
    while (!s.done) {
      CT_RETURN_IF_ERROR(simulate(probes, true));
      if (exact_.at({front, s.hi}).throughput >= target_) break;
      record(exact_, front, s.hi);
      if (s.done) break;  // below the efficiency asked
      s.hi = std::max(s.lo + 1, index_at_least(front, s.floor));
      if (s.hi > top(front)) {
        too_few(exact_, front);
        break;
      }
      probes = {{front, s.hi}};
    }
    return Status::ok();
  }

  // A point with its efficiency against the first count of the same kind of run.
  CapacityPoint efficiency_of(CapacityPoint p, bool is_exact) const {
    const auto& seen = is_exact ? exact_ : estimated_;
    const double reference = rate_in(seen, p.family, 0);
    p.efficiency = reference > 0 ? p.throughput / p.workers / reference : 0;
    p.exact = is_exact;
    return p;
  }

  // A family's result, exact figures for the kept answers.
  CapacityFamilyResult family_result(int f) const {
    const Search& s = search_[f];
    CapacityFamilyResult r;
    r.family = f;
    r.kind = s.kind;
    r.why_not = s.why_not;
    r.min_workers = static_cast<int>(std::ceil(s.floor));
    if (r.kind == Kind::kNoFit) {
      r.answer.family = f;
      r.min_workers = 0;
      return r;
    }
    if (r.kind == Kind::kMeets && s.hi < 0) {
      r.kind = Kind::kTooFew;  // cannot happen: a family without an answer ends with a reason
      r.why_not = "no count met the target";
    }
    if (r.kind == Kind::kMeets) {
      r.answer =
          settled_[f] ? efficiency_of(exact_.at({f, s.hi}), true) : efficiency_of(estimated_.at({f, s.hi}), false);
      if (r.answer.efficiency < q_.min_efficiency) {
        r.kind = Kind::kTooLow;
        r.why_not = "efficiency " + format_number("%.1f", 100 * r.answer.efficiency) + "% at " +
                    with_thousands(r.answer.workers) + " " + q_.noun + ", the fewest that meet the target";
      }
    } else if (r.kind == Kind::kOutranked && s.hi >= 0) {
      r.answer = efficiency_of(estimated_.at({f, s.hi}), false);
      r.min_workers = ladder_[f][s.hi];
    } else if (settled_[f] && s.lo >= 0) {
      r.answer = efficiency_of(exact_.at({f, s.lo}), true);
    } else {
      r.answer = efficiency_of(estimated_.at({f, std::max(s.lo, 0)}), false);
    }
    return r;
  }

  // Phase 3: the best answer's neighbour one step down its ladder, run
  // exactly: the evidence that rests on neither the estimate nor the bound.
  // Should it meet the target after all, the answer moves down and the check
  // repeats.
  Status check_one_below(std::vector<CapacityFamilyResult>& results) {
    if (results.empty() || !results.front().feasible()) return Status::ok();
    CapacityFamilyResult& best = results.front();
    const int f = best.family;
    for (int i = index_at_least(f, best.answer.workers) - 1; i >= 0; --i) {
      CT_RETURN_IF_ERROR(simulate({{f, i}}, true));
      const CapacityPoint below = efficiency_of(exact_.at({f, i}), true);
      if (below.throughput < target_ || below.efficiency < q_.min_efficiency) {
        best.has_below = true;
        best.below = below;
        break;
      }
      best.answer = below;
    }
    std::stable_sort(results.begin(), results.end(), ranks_before);
    return Status::ok();
  }

  // Every point simulated, by family and count, an estimate before an exact run.
  void collect_points() {
    for (const bool is_exact : {false, true}) {
      const auto& seen = is_exact ? exact_ : estimated_;
      for (const auto& [key, p] : seen) {
        CapacityPoint point = seen.count({key.first, 0}) ? efficiency_of(p, is_exact) : p;
        point.exact = is_exact;
        answer_.points.push_back(point);
      }
    }
    std::stable_sort(answer_.points.begin(), answer_.points.end(), [](const CapacityPoint& a, const CapacityPoint& b) {
      return std::tie(a.family, a.workers, a.exact) < std::tie(b.family, b.workers, b.exact);
    });
  }

  const CapacityQuery& q_;
  const CapacityEvaluator& evaluate_;
  const int families_;
  const double target_;
  std::vector<std::vector<int>> ladder_;
  CapacityAnswer answer_;
  Points estimated_, exact_;
  std::vector<Search> search_;
  std::vector<bool> settled_;
};

}  // namespace

Status check_capacity_target(double target_throughput, double min_efficiency) {
  if (!(target_throughput > 0) || !std::isfinite(target_throughput)) {
    return Status::invalid_argument("target_throughput " + format_number("%g", target_throughput) +
                                    ": must be a positive number");
  }
  if (!(min_efficiency >= 0 && min_efficiency <= 1)) {
    return Status::invalid_argument("min_efficiency " + format_number("%g", min_efficiency) + ": must be in [0, 1]");
  }
  return Status::ok();
}

std::vector<int> node_ladder(int devices_per_node, int max_workers) {
  std::vector<int> ladder;
  const int node = std::max(1, devices_per_node);
  if (max_workers < node) {
    if (max_workers >= 1) ladder.push_back(max_workers);
    return ladder;
  }
  for (int w = node; w <= max_workers; w += node)
    ladder.push_back(w);
  return ladder;
}

StatusOr<CapacityAnswer> search_capacity(const CapacityQuery& q, const CapacityEvaluator& evaluate) {
  CT_RETURN_IF_ERROR(check(q));
  return CapacitySearch(q, evaluate).run();
}

}  // namespace clustertwin::sim
