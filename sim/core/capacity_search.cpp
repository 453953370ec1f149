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

}  // namespace

Status check_capacity_target(double target_throughput, double min_efficiency) {
  if (!(target_throughput > 0) || !std::isfinite(target_throughput)) {
    return Status::invalid_argument("--target-throughput " + format_number("%g", target_throughput) +
                                    ": must be a positive number");
  }
  if (!(min_efficiency >= 0 && min_efficiency <= 1)) {
    return Status::invalid_argument("--min-efficiency " + format_number("%g", min_efficiency) + ": must be in [0, 1]");
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
  const int families = static_cast<int>(q.families.size());
  const double target = q.target_throughput;
  // Each family's ladder: the counts where it fits. Indices below are into these.
  std::vector<std::vector<int>> ladder(families);
  CapacityAnswer answer;
  for (int f = 0; f < families; ++f) {
    for (int w : q.ladder) {
      if (!q.fits || q.fits(f, w)) ladder[f].push_back(w);
    }
    answer.space += static_cast<int>(ladder[f].size());
  }
  auto top = [&](int f) { return static_cast<int>(ladder[f].size()) - 1; };
  // (family, ladder index) -> point; estimates and exact runs apart.
  std::map<std::pair<int, int>, CapacityPoint> estimated, exact;

  auto run = [&](const std::vector<std::pair<int, int>>& wanted, bool is_exact) -> Status {
    auto& seen = is_exact ? exact : estimated;
    std::vector<std::pair<int, int>> points, indices;
    for (const auto& [f, i] : wanted) {
      if (seen.count({f, i}) || std::find(indices.begin(), indices.end(), std::pair{f, i}) != indices.end()) continue;
      indices.push_back({f, i});
      points.push_back({f, ladder[f][i]});
    }
    if (points.empty()) return Status::ok();
    auto results = evaluate(points, is_exact);
    if (!results.is_ok()) return results.status();
    if (results->size() != points.size()) return Status::internal("plan: the evaluator returned a wrong count");
    for (size_t k = 0; k < points.size(); ++k) {
      CapacityPoint p = (*results)[k];
      p.family = points[k].first;
      p.workers = points[k].second;
      seen[indices[k]] = p;
    }
    answer.evaluated += static_cast<int>(points.size());
    if (is_exact) answer.exact += static_cast<int>(points.size());
    ++answer.rounds;
    if (q.progress) q.progress(answer.rounds, answer.evaluated);
    return Status::ok();
  };
  auto rate_in = [&](const std::map<std::pair<int, int>, CapacityPoint>& seen, int f, int i) {
    return seen.at({f, i}).throughput / ladder[f][i];
  };
  // The first index of f's ladder at or above `workers` (top + 1 when none).
  auto index_at_least = [&](int f, double workers) {
    return static_cast<int>(std::lower_bound(ladder[f].begin(), ladder[f].end(), workers - 1e-9) - ladder[f].begin());
  };

  std::vector<Search> search(families);
  for (int f = 0; f < families; ++f) {
    if (!ladder[f].empty()) continue;
    search[f].done = true;
    search[f].kind = Kind::kNoFit;
    search[f].why_not = "fits at no count up to " + with_thousands(q.ladder.back()) + " " + q.noun;
  }
  // Phase 1, on estimates. Round 1: the first count of every family, its reference rate.
  std::vector<std::pair<int, int>> first;
  for (int f = 0; f < families; ++f) {
    if (!search[f].done) first.push_back({f, 0});
  }
  CT_RETURN_IF_ERROR(run(first, false));
  auto record = [&](const std::map<std::pair<int, int>, CapacityPoint>& seen, int f, int i) {
    Search& s = search[f];
    if (seen.at({f, i}).throughput >= target) {
      if (s.hi < 0 || i < s.hi) s.hi = i;
      return;
    }
    const double r = rate_in(seen, f, i);
    s.lo = std::max(s.lo, i);
    s.floor = std::max({s.floor, static_cast<double>(ladder[f][i]) + 1, target / std::max(r, 1e-300)});
    if (q.min_efficiency > 0 && r < q.min_efficiency * rate_in(seen, f, 0)) {
      // Efficiency only falls from here, and fewer workers miss the target.
      s.done = true;
      s.kind = Kind::kTooLow;
      s.why_not = "efficiency " + format_number("%.1f", 100 * r / rate_in(seen, f, 0)) + "% already at " +
                  with_thousands(ladder[f][i]) + " " + q.noun + ", which miss the target";
    }
  };
  auto too_few = [&](const std::map<std::pair<int, int>, CapacityPoint>& seen, int f) {
    Search& s = search[f];
    s.done = true;
    s.kind = Kind::kTooFew;
    s.why_not = "needs at least " + with_thousands(std::ceil(s.floor)) + " " + q.noun + " (its rate at " +
                with_thousands(ladder[f][s.lo]) + " " + q.noun + ": " + format_number("%.4g", rate_in(seen, f, s.lo)) +
                " per " + singular(q.noun) + ")";
  };
  for (const auto& [f, i] : first)
    record(estimated, f, i);

  // Then one probe per open family per round.
  for (;;) {
    // The `keep`-th fewest workers among answers found: a family whose bound is above it cannot rank.
    std::vector<int> found;
    for (int f = 0; f < families; ++f) {
      if (search[f].hi >= 0 && search[f].kind == Kind::kMeets) found.push_back(ladder[f][search[f].hi]);
    }
    std::sort(found.begin(), found.end());
    const double cutoff = static_cast<int>(found.size()) >= q.keep ? found[q.keep - 1] : 1e300;
    std::vector<std::pair<int, int>> probes;
    for (int f = 0; f < families; ++f) {
      Search& s = search[f];
      if (s.done) continue;
      const int from = std::max(s.lo + 1, index_at_least(f, s.floor));
      if (s.hi >= 0) {
        if (from >= s.hi) {
          s.done = true;  // every count below the answer is ruled out
          continue;
        }
        probes.push_back({f, s.hi - from <= 2 ? s.hi - 1 : (from + s.hi - 1) / 2});
        continue;
      }
      if (from > top(f)) {
        too_few(estimated, f);
        continue;
      }
      if (ladder[f][from] > cutoff) {
        s.done = true;
        s.kind = Kind::kOutranked;
        s.why_not = "needs at least " + with_thousands(ladder[f][from]) + " " + q.noun + "; not searched further";
        continue;
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
          while (probe > from && ladder[f][probe] > cutoff)
            --probe;
        }
      } else {
        s.creeps = 0;
      }
      probes.push_back({f, probe});
    }
    if (probes.empty()) break;
    CT_RETURN_IF_ERROR(run(probes, false));
    for (const auto& [f, i] : probes)
      record(estimated, f, i);
  }

  // Phase 2: exact runs for the answer in front. Its count is run (with
  // its first count, its efficiency reference, and the count below, phase
  // 3's check); while it misses it moves up by the bound its exact rate
  // gives. Should it then fall behind another family's estimate, that one is
  // settled next, as is every family tied with it. The runner-ups keep their
  // estimates.
  std::vector<int> kept;
  for (int f = 0; f < families; ++f) {
    if (search[f].kind == Kind::kMeets && search[f].hi >= 0) kept.push_back(f);
  }
  std::vector<bool> settled(families, false);
  auto workers_of = [&](int f) { return ladder[f][search[f].hi]; };
  for (;;) {
    // The fewest workers any kept family meets the target with; an unsettled
    // family there is settled next (the highest estimate first), so that
    // families tied at the front are compared on exact runs.
    int fewest = -1;
    for (int f : kept) {
      if (search[f].kind == Kind::kMeets && (fewest < 0 || workers_of(f) < fewest)) fewest = workers_of(f);
    }
    int front = -1;
    for (int f : kept) {
      if (search[f].kind != Kind::kMeets || settled[f] || workers_of(f) != fewest) continue;
      if (front < 0 || estimated.at({f, search[f].hi}).throughput > estimated.at({front, search[front].hi}).throughput)
        front = f;
    }
    if (front < 0) break;
    Search& s = search[front];
    s.lo = -1;
    s.floor = 0;
    s.done = false;
    std::vector<std::pair<int, int>> probes = {{front, 0}, {front, s.hi}};
    if (s.hi > 0) probes.push_back({front, s.hi - 1});
    while (!s.done) {
      CT_RETURN_IF_ERROR(run(probes, true));
      if (exact.at({front, s.hi}).throughput >= target) break;
      record(exact, front, s.hi);
      if (s.done) break;  // below the efficiency asked
      s.hi = std::max(s.lo + 1, index_at_least(front, s.floor));
      if (s.hi > top(front)) {
        too_few(exact, front);
        break;
      }
      probes = {{front, s.hi}};
    }
    settled[front] = true;
  }

  // The results, exact figures for the kept answers; efficiency against the first count of the same kind of run.
  std::vector<CapacityFamilyResult> results;
  auto efficiency_of = [&](CapacityPoint p, bool is_exact) {
    const auto& seen = is_exact ? exact : estimated;
    const double reference = rate_in(seen, p.family, 0);
    p.efficiency = reference > 0 ? p.throughput / p.workers / reference : 0;
    p.exact = is_exact;
    return p;
  };
  for (int f = 0; f < families; ++f) {
    Search& s = search[f];
    CapacityFamilyResult r;
    r.family = f;
    r.kind = s.kind;
    r.why_not = s.why_not;
    r.min_workers = static_cast<int>(std::ceil(s.floor));
    if (r.kind == Kind::kNoFit) {
      r.answer.family = f;
      r.min_workers = 0;
      results.push_back(std::move(r));
      continue;
    }
    if (r.kind == Kind::kMeets && s.hi < 0) {
      r.kind = Kind::kTooFew;  // cannot happen: a family without an answer ends with a reason
      r.why_not = "no count met the target";
    }
    if (r.kind == Kind::kMeets) {
      r.answer = settled[f] ? efficiency_of(exact.at({f, s.hi}), true) : efficiency_of(estimated.at({f, s.hi}), false);
      if (r.answer.efficiency < q.min_efficiency) {
        r.kind = Kind::kTooLow;
        r.why_not = "efficiency " + format_number("%.1f", 100 * r.answer.efficiency) + "% at " +
                    with_thousands(r.answer.workers) + " " + q.noun + ", the fewest that meet the target";
      }
    } else if (r.kind == Kind::kOutranked && s.hi >= 0) {
      r.answer = efficiency_of(estimated.at({f, s.hi}), false);
      r.min_workers = ladder[f][s.hi];
    } else if (settled[f] && s.lo >= 0) {
      r.answer = efficiency_of(exact.at({f, s.lo}), true);
    } else {
      r.answer = efficiency_of(estimated.at({f, std::max(s.lo, 0)}), false);
    }
    results.push_back(std::move(r));
  }
  // Not meeting the target: outranked first (closest), then too low, too few, and those that fit nowhere.
  auto rank = [](Kind k) {
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
  };
  auto order = [&](const CapacityFamilyResult& a, const CapacityFamilyResult& b) {
    if (a.feasible() != b.feasible()) return a.feasible();
    if (a.feasible() && a.answer.workers != b.answer.workers) return a.answer.workers < b.answer.workers;
    if (a.feasible() && a.answer.exact != b.answer.exact) return a.answer.exact;
    if (!a.feasible() && a.kind != b.kind) return rank(a.kind) < rank(b.kind);
    return a.answer.throughput > b.answer.throughput;
  };
  std::stable_sort(results.begin(), results.end(), order);

  // Phase 3: the best answer's neighbour one step down its ladder, run
  // exactly: the evidence that rests on neither the estimate nor the bound.
  // Should it meet the target after all, the answer moves down and the check
  // repeats.
  if (!results.empty() && results.front().feasible()) {
    CapacityFamilyResult& best = results.front();
    const int f = best.family;
    for (int i = index_at_least(f, best.answer.workers) - 1; i >= 0; --i) {
      CT_RETURN_IF_ERROR(run({{f, i}}, true));
      const CapacityPoint below = efficiency_of(exact.at({f, i}), true);
      if (below.throughput < target || below.efficiency < q.min_efficiency) {
        best.has_below = true;
        best.below = below;
        break;
      }
      best.answer = below;
    }
    std::stable_sort(results.begin(), results.end(), order);
  }
  answer.families = std::move(results);
  for (const bool is_exact : {false, true}) {
    const auto& seen = is_exact ? exact : estimated;
    for (const auto& [key, p] : seen) {
      CapacityPoint point = seen.count({key.first, 0}) ? efficiency_of(p, is_exact) : p;
      point.exact = is_exact;
      answer.points.push_back(point);
    }
  }
  std::stable_sort(answer.points.begin(), answer.points.end(), [](const CapacityPoint& a, const CapacityPoint& b) {
    return std::tie(a.family, a.workers, a.exact) < std::tie(b.family, b.workers, b.exact);
  });
  return answer;
}

}  // namespace clustertwin::sim
