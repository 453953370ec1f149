// The plan runner with ranks as threads: overlap of streams, dependencies,
// and a collective-order mismatch reported with both task names.

#include "real/core/plan_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "models/plan/plan_json.h"
#include "tests/real/rank_threads.h"

namespace clustertwin::real {
namespace {

models::Plan small_overlap() {
  auto plan = models::read_plan(std::string(CT_SOURCE_DIR) + "/sim/examples/plans/small_overlap.json");
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  return *plan;
}

// The comm stream must run while the compute stream computes. Timing alone cannot show it on a loaded
// machine (a descheduled thread starts late), so the bodies meet: bwd and the same step's all-to-all each
// wait, up to 10 s, until the other has started, then take 2 ms more. A runner that serialised its streams
// would leave the first of them waiting for a task queued behind it.
TEST(PlanRunnerTest, StreamsOverlapAndDependenciesHold) {
  models::Plan plan = small_overlap();
  for (auto& t : plan.tasks) {
    if (t.name == "a2a_fwd") t.cost_key = "a2a_fwd";
  }
  std::mutex started_mutex;
  std::condition_variable started_cv;
  std::set<std::tuple<int, int, std::string>> started;  // (rank, step, task)
  auto meet = [&](TaskContext& t, const std::string& other) -> Status {
    std::unique_lock<std::mutex> lock(started_mutex);
    started.insert({t.rank, t.step, t.task.name});
    started_cv.notify_all();
    if (!started_cv.wait_for(lock, std::chrono::seconds(10), [&] {
          return started.count({t.rank, t.step, other}) > 0;
        })) {
      return Status::internal(t.task.name + ": " + other + " never started while it ran");
    }
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return Status::ok();
  };
  std::mutex mutex;
  std::map<int, std::vector<traces::Event>> events;
  auto results = testing::run_ranks(2, [&](Communicator& c) -> Status {
    Tracer tracer(c.rank());
    RunnerOptions options;
    options.steps = 3;
    PlanRunner runner(plan, c, tracer, options);
    set_synthetic_bodies(runner, 1);
    runner.set_body("a2a_fwd", [&](TaskContext& t) { return meet(t, "bwd"); });
    runner.set_body("bwd", [&](TaskContext& t) { return meet(t, "a2a_fwd"); });
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
