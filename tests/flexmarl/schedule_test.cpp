// The frameworks' shared decisions (models/flexmarl/schedule.h): phases,
// turn readiness, micro-batch cuts and the publish point.

#include "models/flexmarl/schedule.h"

#include <gtest/gtest.h>

#include <vector>

namespace clustertwin::models::flexmarl {
namespace {

Schedule make(Framework f, std::vector<int> turns, int batch = 16, int group = 4, int micro_batch = 4) {
  auto s = Schedule::create(f, std::move(turns), batch, group, micro_batch);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return *s;
}

TEST(ScheduleTest, SyncRollsOutOneAgentAtATimeMartiOneTurnFlexmarlNone) {
  // Agents 0 and 2 answer in turn 0, agent 1 in turn 1.
  const std::vector<int> turns = {0, 1, 0};
  EXPECT_EQ(make(Framework::kSync, turns).phases(), (std::vector<std::vector<int>>{{0}, {2}, {1}}));
  EXPECT_EQ(make(Framework::kMarti, turns).phases(), (std::vector<std::vector<int>>{{0, 2}, {1}}));
  for (Framework f : {Framework::kFlexMarl, Framework::kNoBalance, Framework::kNoAsync})
    EXPECT_TRUE(make(f, turns).phases().empty());
}

TEST(ScheduleTest, SyncRunsOneQueryAtATimeMartiAllFlexmarlItsParallelism) {
  // 16 samples in groups of 4: 4 queries.
  EXPECT_EQ(make(Framework::kSync, {0, 1}).queries(), 4);
  EXPECT_EQ(make(Framework::kSync, {0, 1}).queries_in_flight(4), 1);
  EXPECT_EQ(make(Framework::kMarti, {0, 1}).queries_in_flight(1), 4);
  for (Framework f : {Framework::kFlexMarl, Framework::kNoBalance, Framework::kNoAsync}) {
    EXPECT_EQ(make(f, {0, 1}).queries_in_flight(2), 2);
    EXPECT_EQ(make(f, {0, 1}).queries_in_flight(9), 4);  // never more than the batch has
  }
}

TEST(ScheduleTest, ASampleIsReadyOnceEveryAgentOfTheTurnBeforeAnsweredIt) {
  const Schedule s = make(Framework::kFlexMarl, {0, 0, 1});
  std::vector<std::vector<bool>> done(3, std::vector<bool>(16, false));
  EXPECT_TRUE(s.sample_ready(0, 5, done));  // turn 0 waits for nothing
  done[0][5] = true;
  EXPECT_FALSE(s.sample_ready(2, 5, done));  // agent 1 has not answered sample 5
  done[1][5] = true;
  EXPECT_TRUE(s.sample_ready(2, 5, done));
  EXPECT_FALSE(s.sample_ready(2, 6, done));
}

TEST(ScheduleTest, OnlyWholeGroupsAreReadyToTrain) {
  const Schedule s = make(Framework::kFlexMarl, {0}, 16, 4, 4);
  std::vector<bool> done(16, false);
  for (int i : {0, 1, 2, 3, 4, 5, 6, 8})
    done[static_cast<size_t>(i)] = true;
  EXPECT_EQ(s.complete_rows(done), 4);  // group 0 only; group 1 lacks sample 7, group 2 has one of four
  done[7] = true;
  EXPECT_EQ(s.complete_rows(done), 8);
}

TEST(ScheduleTest, MicroBatchesAsSoonAsThereAreEnoughTheRemainderLast) {
  // batch 16, micro-batch 6: cuts of 6 while 6 rows wait, then the last 4 once all 16 are complete.
  const Schedule s = make(Framework::kFlexMarl, {0}, 16, 4, 6);
  EXPECT_EQ(s.next_micro_batch(4, 0, false), 0);
  EXPECT_EQ(s.next_micro_batch(8, 0, false), 6);
  EXPECT_EQ(s.next_micro_batch(8, 6, false), 0);
  EXPECT_EQ(s.next_micro_batch(12, 6, false), 6);
  EXPECT_EQ(s.next_micro_batch(16, 12, false), 4);
  EXPECT_EQ(s.next_micro_batch(16, 16, false), 0);
}

TEST(ScheduleTest, NoAsyncCutsTheSameMicroBatchesOnlyOnceTheBatchIsComplete) {
  const Schedule s = make(Framework::kNoAsync, {0}, 16, 4, 4);
  EXPECT_EQ(s.next_micro_batch(12, 0, false), 0);
  EXPECT_EQ(s.next_micro_batch(16, 0, false), 4);
  EXPECT_EQ(s.next_micro_batch(16, 12, false), 4);
}

TEST(ScheduleTest, SyncAndMartiTrainTheWholeBatchOnceRolloutEnds) {
  for (Framework f : {Framework::kSync, Framework::kMarti}) {
    const Schedule s = make(f, {0, 1}, 16, 4, 4);
    EXPECT_EQ(s.next_micro_batch(16, 0, false), 0);  // rollout still running
    EXPECT_EQ(s.next_micro_batch(12, 0, true), 0);
    EXPECT_EQ(s.next_micro_batch(16, 0, true), 16);
    EXPECT_EQ(s.next_micro_batch(16, 16, true), 0);
  }
}

TEST(ScheduleTest, PublishesOnceTheWholeBatchTrained) {
  const Schedule s = make(Framework::kFlexMarl, {0}, 16, 4, 4);
  EXPECT_FALSE(s.publishes(12));
  EXPECT_TRUE(s.publishes(16));
}

TEST(ScheduleTest, BadShapesAreRefusedNamingTheValue) {
  EXPECT_EQ(Schedule::create(Framework::kSync, {}, 16, 4, 4).status().message(), "schedule: no agents");
  EXPECT_EQ(Schedule::create(Framework::kSync, {0}, 16, 5, 4).status().message(),
            "schedule: group 5 does not divide the batch 16");
  EXPECT_EQ(Schedule::create(Framework::kSync, {0}, 16, 4, 0).status().message(),
            "schedule: micro-batch 0 must be >= 1");
  EXPECT_EQ(Schedule::create(Framework::kSync, {-1}, 16, 4, 4).status().message(), "schedule: turn -1 must be >= 0");
}

TEST(ScheduleTest, DecisionsReadAsALog) {
  EXPECT_EQ(describe({Decision::Kind::kPhase, 2, 1}), "phase 1: agent 2");
  EXPECT_EQ(describe({Decision::Kind::kMicroBatch, 0, 16}), "micro-batch agent 0: 16 samples");
  EXPECT_EQ(describe({Decision::Kind::kPublish, 1, 64}), "publish agent 1 (64 samples)");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
