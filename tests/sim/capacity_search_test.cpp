// The capacity search against full enumeration on families whose
// throughput is known in closed form.

#include "sim/core/capacity_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

namespace clustertwin::sim {
namespace {

// Per-worker rate that falls with the log of the worker count: rate * w * (1 - loss * log2(w / 16)).
struct Family {
  double rate;
  double loss;
  double throughput(int w) const { return rate * w * (1 - loss * std::log2(w / 16.0)); }
};

// Answers from the closed form; estimates (exact false) scaled by `bias`.
struct Counting {
  explicit Counting(std::vector<Family> f, double estimate_bias = 1) : families(std::move(f)), bias(estimate_bias) {}
  std::vector<Family> families;
  double bias;
  std::set<std::tuple<int, int, bool>> asked;
  int duplicates = 0;
  CapacityEvaluator evaluator() {
    return [this](const std::vector<std::pair<int, int>>& points, bool exact) -> StatusOr<std::vector<CapacityPoint>> {
      std::vector<CapacityPoint> out;
      for (const auto& [f, w] : points) {
        if (!asked.insert({f, w, exact}).second) ++duplicates;
        CapacityPoint p;
        p.throughput = families[f].throughput(w) * (exact ? 1 : bias);
        p.step_s = 1.0 / p.throughput;
        out.push_back(p);
      }
      return out;
    };
  }
};

// Each family's fewest workers on the ladder that meet `target` (0: none).
int enumerate(const Family& fam, const std::vector<int>& ladder, double target) {
  for (int w : ladder) {
    if (fam.throughput(w) >= target) return w;
  }
  return 0;
}

CapacityQuery query(int families, double target) {
  CapacityQuery q;
  for (int f = 0; f < families; ++f)
    q.families.push_back("f" + std::to_string(f));
  q.ladder = node_ladder(16, 1536);
  q.target_throughput = target;
  return q;
}

TEST(CapacitySearchTest, NodeLadder) {
  EXPECT_EQ(node_ladder(16, 1536).size(), 96u);
  EXPECT_EQ(node_ladder(16, 1536).front(), 16);
  EXPECT_EQ(node_ladder(16, 1536).back(), 1536);
  EXPECT_EQ(node_ladder(8, 20), (std::vector<int>{8, 16}));
  EXPECT_EQ(node_ladder(8, 5), (std::vector<int>{5}));
}

TEST(CapacitySearchTest, FindsWhatEnumerationFindsWithFewerSimulations) {
  Counting c({{100, 0.02}, {300, 0.05}, {250, 0.01}, {40, 0.0}});
  for (double target : {1e3, 5e4, 1.2e5, 3.3e5}) {
    c.asked.clear();
    const CapacityQuery q = query(4, target);
    auto answer = search_capacity(q, c.evaluator());
    ASSERT_TRUE(answer.is_ok()) << answer.status().message();
    EXPECT_EQ(c.duplicates, 0);
    EXPECT_EQ(answer->evaluated, static_cast<int>(c.asked.size()));
    EXPECT_LE(answer->evaluated, 4 * 6) << target;  // a few probes per family, not 96
    // Enumeration: each family's fewest workers that meet the target.
    for (const CapacityFamilyResult& r : answer->families) {
      const Family& fam = c.families[r.family];
      const int fewest = enumerate(fam, q.ladder, target);
      if (fewest == 0) {
        EXPECT_EQ(r.kind, CapacityFamilyResult::Kind::kTooFew) << target << " family " << r.family;
        EXPECT_NE(r.why_not.find("needs at least"), std::string::npos) << r.why_not;
        EXPECT_GT(r.min_workers, 1536);
        continue;
      }
      ASSERT_TRUE(r.feasible()) << target << " " << r.family << " " << r.why_not;
      EXPECT_EQ(r.answer.workers, fewest) << target << " family " << r.family;
      EXPECT_NEAR(r.answer.efficiency, fam.throughput(fewest) / fewest / (fam.throughput(16) / 16), 1e-12);
    }
    // The best answer's neighbour one node down was simulated and misses.
    const CapacityFamilyResult& best = answer->families.front();
    ASSERT_TRUE(best.feasible());
    if (best.answer.workers > 16) {
      ASSERT_TRUE(best.has_below);
      EXPECT_EQ(best.below.workers, best.answer.workers - 16);
      EXPECT_LT(best.below.throughput, target);
    }
    // Best first: fewest workers, then exact before estimated, then the most throughput.
    for (size_t i = 1; i < answer->families.size(); ++i) {
      const auto& a = answer->families[i - 1];
      const auto& b = answer->families[i];
      if (a.feasible() && b.feasible()) {
        EXPECT_TRUE(a.answer.workers < b.answer.workers ||
                    (a.answer.workers == b.answer.workers &&
                     (a.answer.exact > b.answer.exact || a.answer.throughput >= b.answer.throughput)));
      }
      EXPECT_FALSE(!a.feasible() && b.feasible());
    }
  }
}

// Efficiency that rises a little with workers breaks the bound's assumption;
// the check one node down still finds the true answer for the best family.
TEST(CapacitySearchTest, TheBestAnswerIsWalkedDownWhenTheBoundWasWrong) {
  Counting c({{100, -0.01}});
  const CapacityQuery q = query(1, 5e4);
  auto answer = search_capacity(q, c.evaluator());
  ASSERT_TRUE(answer.is_ok());
  const int fewest = enumerate(c.families[0], q.ladder, 5e4);
  ASSERT_TRUE(answer->feasible());
  EXPECT_EQ(answer->families.front().answer.workers, fewest);
  EXPECT_TRUE(answer->families.front().has_below);
}

// Estimates 4% too high or too low steer the search; the exact runs settle the answers.
TEST(CapacitySearchTest, EstimatesThatAreOffAreSettledByExactRuns) {
  for (double bias : {1.04, 0.96}) {
    Counting c({{100, 0.02}, {300, 0.05}, {250, 0.01}}, bias);
    const CapacityQuery q = query(3, 1.2e5);
    auto answer = search_capacity(q, c.evaluator());
    ASSERT_TRUE(answer.is_ok());
    EXPECT_EQ(c.duplicates, 0);
    EXPECT_GT(answer->exact, 0);
    for (const CapacityFamilyResult& r : answer->families) {
      const int fewest = enumerate(c.families[r.family], q.ladder, 1.2e5);
      if (fewest == 0) continue;
      ASSERT_TRUE(r.feasible()) << bias << " family " << r.family << ": " << r.why_not;
      EXPECT_GE(r.answer.throughput, 1.2e5);
      // The answer in front is exact; runner-ups carry their estimates, and say so.
      const double truth = c.families[r.family].throughput(r.answer.workers);
      EXPECT_DOUBLE_EQ(r.answer.throughput, r.answer.exact ? truth : bias * truth);
      EXPECT_LE(std::abs(r.answer.workers - fewest), 0.05 * fewest + 16) << bias << " family " << r.family;
    }
    const CapacityFamilyResult& best = answer->families.front();
    EXPECT_TRUE(best.answer.exact);
    EXPECT_EQ(best.answer.workers, enumerate(c.families[best.family], q.ladder, 1.2e5)) << bias;
    EXPECT_TRUE(best.has_below);
    EXPECT_TRUE(best.below.exact);
  }
}

// Every point the search simulated comes back once, in order, with what the
// evaluator said and the efficiency against its own kind of run.
TEST(CapacitySearchTest, PointsAreEverySimulationInOrder) {
  const double bias = 1.04;
  Counting c({{100, 0.02}, {300, 0.05}, {250, 0.01}}, bias);
  const CapacityQuery q = query(3, 1.2e5);
  auto answer = search_capacity(q, c.evaluator());
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->points.size(), c.asked.size());
  EXPECT_EQ(static_cast<int>(answer->points.size()), answer->evaluated);
  int exact = 0;
  for (size_t i = 0; i < answer->points.size(); ++i) {
    const CapacityPoint& p = answer->points[i];
    EXPECT_EQ(c.asked.count({p.family, p.workers, p.exact}), 1u) << p.family << " " << p.workers;
    if (i > 0) {
      const CapacityPoint& prev = answer->points[i - 1];
      EXPECT_LT(std::tie(prev.family, prev.workers, prev.exact), std::tie(p.family, p.workers, p.exact));
    }
    const Family& fam = c.families[p.family];
    const double scale = p.exact ? 1 : bias;
    EXPECT_DOUBLE_EQ(p.throughput, scale * fam.throughput(p.workers));
    EXPECT_NEAR(p.efficiency, fam.throughput(p.workers) / p.workers / (fam.throughput(16) / 16), 1e-12);
    exact += p.exact;
  }
  EXPECT_EQ(exact, answer->exact);
}

TEST(CapacitySearchTest, FamiliesThatCannotRankAreNotSearchedToTheEnd) {
  Counting c({{300, 0.0}, {100, 0.02}});
  CapacityQuery q = query(2, 1e5);
  q.keep = 1;
  auto one = search_capacity(q, c.evaluator());
  ASSERT_TRUE(one.is_ok());
  ASSERT_TRUE(one->feasible());
  EXPECT_EQ(one->families.front().answer.workers, 336);
  EXPECT_EQ(one->families.back().kind, CapacityFamilyResult::Kind::kOutranked);
  EXPECT_GT(one->families.back().min_workers, 336);
  q.keep = 2;
  auto two = search_capacity(q, c.evaluator());
  ASSERT_TRUE(two.is_ok());
  EXPECT_TRUE(two->families.back().feasible());
  EXPECT_GT(two->evaluated, one->evaluated);
}

TEST(CapacitySearchTest, EfficiencyBoundRulesOutAFamilyThatScalesPoorly) {
  Counting c({{400, 0.08}, {200, 0.01}});
  CapacityQuery q = query(2, 1.5e5);
  auto loose = search_capacity(q, c.evaluator());
  ASSERT_TRUE(loose.is_ok());
  ASSERT_TRUE(loose->feasible());
  EXPECT_EQ(loose->families.front().family, 0);  // the fast one needs fewer workers
  q.min_efficiency = 0.6;
  auto strict = search_capacity(q, c.evaluator());
  ASSERT_TRUE(strict.is_ok());
  ASSERT_TRUE(strict->feasible());
  EXPECT_EQ(strict->families.front().family, 1);
  EXPECT_EQ(strict->families.back().kind, CapacityFamilyResult::Kind::kTooLow);
  EXPECT_NE(strict->families.back().why_not.find("efficiency"), std::string::npos);
}

TEST(CapacitySearchTest, NothingMeetsAnUnreachableTarget) {
  Counting c({{100, 0.02}});
  auto answer = search_capacity(query(1, 1e9), c.evaluator());
  ASSERT_TRUE(answer.is_ok());
  EXPECT_FALSE(answer->feasible());
  EXPECT_EQ(answer->families.front().kind, CapacityFamilyResult::Kind::kTooFew);
  EXPECT_EQ(answer->evaluated, 1);  // one node's rate already rules out 1,536 workers
}

// A family that fits only at some counts (a layout needs 64 devices, or a
// multiple of 64) searches its own ladder: its reference is its first count
// that fits, one step down is its previous fitting count, and the evaluator
// is never asked for a count where it does not fit. A family that fits
// nowhere is reported, last.
TEST(CapacitySearchTest, FamiliesSearchOnlyTheCountsWhereTheyFit) {
  Counting c({{300, 0.02}, {100, 0.0}, {500, 0.0}});
  CapacityQuery q = query(3, 1.2e5);
  q.noun = "devices";
  q.fits = [](int family, int workers) {
    if (family == 0) return workers % 64 == 0;
    if (family == 2) return false;
    return true;
  };
  auto answer = search_capacity(q, c.evaluator());
  ASSERT_TRUE(answer.is_ok()) << answer.status().message();
  for (const auto& [f, w, exact] : c.asked) {
    EXPECT_TRUE(q.fits(f, w)) << "family " << f << " asked at " << w;
  }
  EXPECT_EQ(answer->space, 24 + 96);
  std::vector<int> fitting;
  for (int w : q.ladder) {
    if (w % 64 == 0) fitting.push_back(w);
  }
  const int fewest = enumerate(c.families[0], fitting, 1.2e5);
  ASSERT_TRUE(answer->feasible());
  const CapacityFamilyResult& best = answer->families.front();
  EXPECT_EQ(best.family, 0);
  EXPECT_EQ(best.answer.workers, fewest);
  const Family& f0 = c.families[0];
  EXPECT_NEAR(best.answer.efficiency, f0.throughput(fewest) / fewest / (f0.throughput(64) / 64), 1e-12);
  ASSERT_TRUE(best.has_below);
  EXPECT_EQ(best.below.workers, fewest - 64);
  EXPECT_EQ(answer->families[1].family, 1);
  EXPECT_EQ(answer->families[1].answer.workers, enumerate(c.families[1], q.ladder, 1.2e5));
  const CapacityFamilyResult& none = answer->families.back();
  EXPECT_EQ(none.family, 2);
  EXPECT_EQ(none.kind, CapacityFamilyResult::Kind::kNoFit);
  EXPECT_EQ(none.why_not, "fits at no count up to 1,536 devices");
}

TEST(CapacitySearchTest, BadQueriesAndEvaluatorErrorsAreReported) {
  Counting c({{100, 0.02}});
  CapacityQuery q = query(1, 0);
  EXPECT_EQ(search_capacity(q, c.evaluator()).status().message(), "target_throughput 0: must be a positive number");
  q.target_throughput = 1e4;
  q.min_efficiency = 1.5;
  EXPECT_EQ(search_capacity(q, c.evaluator()).status().message(), "min_efficiency 1.5: must be in [0, 1]");
  q.min_efficiency = 0;
  q.ladder = {32, 16};
  EXPECT_EQ(search_capacity(q, c.evaluator()).status().code(), Status::Code::kInvalidArgument);
  q.ladder = node_ladder(16, 256);
  auto failing = [](const std::vector<std::pair<int, int>>&, bool) -> StatusOr<std::vector<CapacityPoint>> {
    return Status::internal("simulation failed");
  };
  EXPECT_EQ(search_capacity(q, failing).status().message(), "simulation failed");
}

}  // namespace
}  // namespace clustertwin::sim
