// The plan runner with ranks as threads: overlap of streams, dependencies,
// and a collective-order mismatch reported with both task names.

#include "real/core/plan_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "models/plan/plan_json.h"
#include "tests/real/rank_threads.h"

namespace clustertwin::real {
namespace {

models::Plan small_overlap() {
  auto plan = models::read_plan(std::string(CT_SOURCE_DIR) + "/sim/examples/plans/small_overlap.json");
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  return *plan;
}

// FLOPs that take about `seconds` of matrix products on this machine, so the
// overlap below does not depend on how fast its BLAS is.
double flops_for_seconds(double seconds) {
  at::Tensor a = at::rand({256, 256}), b = at::rand({256, 256}), c = at::empty({256, 256});
  at::mm_out(c, a, b);  // warm-up
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i)
    at::mm_out(c, a, b);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds * 8 * 2.0 * 256 * 256 * 256 / std::max(elapsed, 1e-9);
}

TEST(PlanRunnerTest, StreamsOverlapAndDependenciesHold) {
  models::Plan plan = small_overlap();
  // bwd long enough (~80 ms) that the comm stream starts while it runs, even
  // with both ranks' four stream threads sharing two loaded cores.
  const double bwd_flops = flops_for_seconds(0.08);
  for (auto& t : plan.tasks) {
    if (t.name == "fwd") t.flops = bwd_flops / 2;
    if (t.name == "bwd") t.flops = bwd_flops;
  }
  std::mutex mutex;
  std::map<int, std::vector<traces::Event>> events;
  auto results = testing::run_ranks(2, [&](Communicator& c) -> Status {
    Tracer tracer(c.rank());
    RunnerOptions options;
    options.steps = 3;
    PlanRunner runner(plan, c, tracer, options);
    set_synthetic_bodies(runner, 1);
    tracer.start();
    CT_RETURN_IF_ERROR(runner.run());
    std::lock_guard<std::mutex> lock(mutex);
    events[c.rank()] = tracer.events();
    return Status::ok();
  });
  for (int r = 0; r < 2; ++r)
    ASSERT_TRUE(results[r].is_ok()) << results[r].message();
  for (const auto& [rank, list] : events) {
    ASSERT_EQ(list.size(), 12u);                                         // 4 tasks x 3 steps
    std::map<std::pair<int64_t, std::string>, const traces::Event*> by;  // (step, name)
    for (const auto& e : list)
      by[{*e.step, e.name}] = &e;
    double overlap = 0;
    for (int64_t s = 0; s < 3; ++s) {
      const auto* fwd = by[{s, "fwd"}];
      const auto* a2a = by[{s, "a2a_fwd"}];
      const auto* bwd = by[{s, "bwd"}];
      const auto* ar = by[{s, "grad_ar"}];
      EXPECT_GE(a2a->ts_us, fwd->end_us()) << "a2a_fwd waits for fwd";
      EXPECT_GE(bwd->ts_us, fwd->end_us()) << "bwd follows fwd on its stream";
      EXPECT_GE(ar->ts_us, bwd->end_us()) << "grad_ar waits for bwd";
      if (s > 0) {
        const auto* previous_bwd = by[{s - 1, "bwd"}];
        EXPECT_GE(fwd->ts_us, previous_bwd->end_us()) << "fwd waits for the previous bwd";
      }
      // The all-to-all runs on the comm stream while bwd computes.
      overlap += std::max(0.0, std::min(a2a->end_us(), bwd->end_us()) - std::max(a2a->ts_us, bwd->ts_us));
    }
    EXPECT_GT(overlap, 0) << "rank " << rank << ": the comm stream never ran during compute";
  }
}

// Rank 0 runs 'x' then 'y' on its stream, rank 1 'y' then 'x'.
TEST(PlanRunnerTest, CollectiveOrderMismatchNamesBothTasks) {
  auto make = [](bool swapped) {
    models::Plan plan;
    plan.system = "t";
    plan.variant = "mismatch";
    plan.streams = {"comm"};
    for (const char* name : {"x", "y"}) {
      models::Task t;
      t.name = name;
      t.kind = models::TaskKind::kCollective;
      t.bytes = name[0] == 'x' ? 64 : 128;
      t.collective = models::Collective{};
      plan.tasks.push_back(t);
    }
    if (swapped) std::swap(plan.tasks[0], plan.tasks[1]);
    for (size_t i = 0; i < plan.tasks.size(); ++i)
      plan.tasks[i].id = static_cast<int>(i);
    return plan;
  };
  const models::Plan a = make(false), b = make(true);
  const auto start = std::chrono::steady_clock::now();
  auto results = testing::run_ranks(2, [&](Communicator& c) -> Status {
    Tracer tracer(c.rank());
    PlanRunner runner(c.rank() == 0 ? a : b, c, tracer, RunnerOptions{});
    set_synthetic_bodies(runner, 1);
    return runner.run();
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 15.0);
  ASSERT_FALSE(results[0].is_ok());
  EXPECT_EQ(results[0].message(),
            "collective order differs across ranks on stream 'comm': rank 0 issued 'x' (step 0, 64 B) while rank 1 "
            "issued 'y' (step 0, 128 B)");
  ASSERT_FALSE(results[1].is_ok());
  EXPECT_NE(results[1].message().find("rank 1 issued 'y'"), std::string::npos) << results[1].message();
}

}  // namespace
}  // namespace clustertwin::real
