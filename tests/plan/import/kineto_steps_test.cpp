// models/plan/import/kineto_steps.h: a trace's device events by rank and profiler
// step (which step an event belongs to, in what order, where each step ends),
// and the names derive_plan gives them.

#include "models/plan/import/kineto_steps.h"

#include <gtest/gtest.h>

#include <optional>

#include "tests/plan/import/kineto_events.h"

namespace clustertwin::models::kineto_detail {
namespace {

using traces::Category;

// An event launched by the host at `host_ts` (none: not a launched kernel).
traces::Event step_event(const std::string& name, Category c, int64_t rank, int64_t stream, double ts, double dur,
                         std::optional<double> host_ts = std::nullopt) {
  traces::Event e = testing::timed_event(name, c, rank, stream, ts, dur);
  e.host_ts_us = host_ts;
  return e;
}

// Rank 0, two profiler steps marked at 100 (to 150) and 200 (to 240):
//   [0] pre  compute at 50, before the first marker: the profiler's warm-up, dropped
//   [1] a    compute at 120, stream 7: step 0
//   [2] b    compute at 205, launched at 160: step 0, the step that launched it
//   [3] c    comm at 210, stream 8: step 1
//   [4] d    compute at 115, stream 7: step 0, ahead of a on its stream
//   [5] the GPU timeline's mark of step 1, later than the host's: ignored
traces::Trace two_steps() {
  traces::Trace t;
  t.metadata.streams = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "compute", "nccl"};
  t.events = {
      step_event("pre", Category::kCompute, 0, 7, 50, 5),
      step_event("a", Category::kCompute, 0, 7, 120, 10),
      step_event("b", Category::kCompute, 0, 7, 205, 10, 160.0),
      step_event("c", Category::kComm, 0, 8, 210, 5),
      step_event("d", Category::kCompute, 0, 7, 115, 3),
      step_event("ProfilerStep#1", Category::kHost, 0, 0, 110, 190),
      step_event("ProfilerStep#1", Category::kHost, 0, 0, 100, 50),
      step_event("ProfilerStep#2", Category::kHost, 0, 0, 200, 40),
  };
  return t;
}

TEST(KinetoStepsTest, EventsGoToTheStepThatLaunchedThemInStartOrder) {
  auto steps = steps_of(two_steps(), "t.json");
  ASSERT_TRUE(steps.is_ok()) << steps.status().message();
  ASSERT_EQ(steps->size(), 1u);
  const auto& rank0 = steps->at(0);
  ASSERT_EQ(rank0.size(), 2u);
  const StepEvents& s0 = rank0.at(0);
  EXPECT_EQ(s0.start_us, 100);  // the earliest marker of its name
  EXPECT_EQ(s0.by_stream.at(7), (std::vector<size_t>{4, 1, 2}));
  EXPECT_EQ(s0.by_stream.count(8), 0u);
  EXPECT_EQ(s0.last_end_us, 215);  // b's end
  const StepEvents& s1 = rank0.at(1);
  EXPECT_EQ(s1.start_us, 200);
  EXPECT_EQ(s1.by_stream.at(8), (std::vector<size_t>{3}));
}

TEST(KinetoStepsTest, AStepEndsAtTheNextStartAndTheLastOneGapAfterItsMarker) {
  auto steps = steps_of(two_steps(), "t.json");
  ASSERT_TRUE(steps.is_ok()) << steps.status().message();
  const StepEvents& s0 = steps->at(0).at(0);
  EXPECT_EQ(s0.end_us, 200.0);
  EXPECT_EQ(s0.marker_end_us, 150);
  // The last step: its marker's end 240 plus the gap step 0 left between its marker's end and step 1's
  // start (200 - 150).
  const StepEvents& s1 = steps->at(0).at(1);
  EXPECT_EQ(s1.end_us, 290.0);
  EXPECT_EQ(s1.marker_end_us, 240);
}

TEST(KinetoStepsTest, WithoutMarkersARankIsOneStepFromItsFirstLaunch) {
  traces::Trace t;
  t.events = {step_event("x", Category::kCompute, 3, 0, 300, 5, 290.0), step_event("y", Category::kCopy, 3, 1, 280, 5),
              step_event("host work", Category::kHost, 3, 2, 100, 5)};
  auto steps = steps_of(t, "t.json");
  ASSERT_TRUE(steps.is_ok()) << steps.status().message();
  const StepEvents& s = steps->at(3).at(0);
  EXPECT_EQ(s.start_us, 280);  // y's start, before x's launch at 290; host events are not device events
  EXPECT_FALSE(s.end_us.has_value());
  EXPECT_EQ(s.last_end_us, 305);
}

TEST(KinetoStepsTest, NoDeviceEventsOrUnequalStepCountsAreOneLineNamingTheFile) {
  traces::Trace host_only;
  host_only.events = {step_event("ProfilerStep#1", Category::kHost, 0, 0, 0, 10)};
  EXPECT_EQ(steps_of(host_only, "t.json").status().message(),
            "t.json: no device events (compute, comm, copy) in profiler steps to derive a plan from");
  traces::Trace uneven = two_steps();
  uneven.events.push_back(step_event("z", Category::kCompute, 1, 0, 10, 1));
  EXPECT_EQ(steps_of(uneven, "t.json").status().message(),
            "t.json: rank 1 has 1 profiler steps with device events, rank 0 has 2 (every rank must record the same "
            "steps)");
}

TEST(KinetoStepsTest, NamesOfStreamsKeysAndPointToPointEvents) {
  const traces::Trace t = two_steps();
  EXPECT_EQ(stream_name(t, 7), "compute");
  EXPECT_EQ(stream_name(t, 9), "stream 9");
  EXPECT_EQ(stream_name(t, -1), "stream -1");
  traces::Event e = step_event("nccl:send", Category::kComm, 0, 8, 0, 1);
  EXPECT_EQ(key_of(e), "nccl:send");
  e.cost_key = "p2p";
  EXPECT_EQ(key_of(e), "p2p");
  EXPECT_FALSE(is_point_to_point(e));  // no collective named
  e.collective = "recv";
  EXPECT_TRUE(is_point_to_point(e));
  e.collective = "allreduce";
  EXPECT_FALSE(is_point_to_point(e));
  e.collective = "send";
  e.category = Category::kCopy;
  EXPECT_FALSE(is_point_to_point(e));
}

}  // namespace
}  // namespace clustertwin::models::kineto_detail
