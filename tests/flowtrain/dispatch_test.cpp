// Which micro-batch each backbone replica trains next (models/flowtrain/dispatch.h):
// round-robin (the real executor) and first-ready (the cluster twin).

#include "models/flowtrain/dispatch.h"

#include <gtest/gtest.h>

#include <vector>

#include "models/flowtrain/tiny_plan.h"

namespace clustertwin::models::flowtrain {
namespace {

using Dispatch = MicroBatchDispatch;

TEST(MicroBatchDispatchTest, RoundRobinGivesReplicaKEveryBthMicroBatchWhateverIsReady) {
  // 7 micro-batches, 3 replicas: replica 0 takes 0, 3, 6; replica 1 takes 1, 4; replica 2 takes 2, 5.
  Dispatch d(Dispatch::Policy::kRoundRobin, 7, 3);
  auto never = [](int) { return false; };
  EXPECT_EQ(d.take(1, never), 1);
  EXPECT_EQ(d.take(0, never), 0);
  EXPECT_EQ(d.take(0, never), 3);
  EXPECT_EQ(d.take(0, never), 6);
  EXPECT_EQ(d.take(0, never), Dispatch::kDone);
  EXPECT_EQ(d.take(1, never), 4);
  EXPECT_EQ(d.take(1, never), Dispatch::kDone);
  EXPECT_EQ(d.take(2, never), 2);
  EXPECT_EQ(d.take(2, never), 5);
  EXPECT_EQ(d.take(2, never), Dispatch::kDone);
}

TEST(MicroBatchDispatchTest, FirstReadyTakesTheLowestReadyMicroBatchNobodyTook) {
  Dispatch d(Dispatch::Policy::kFirstReady, 4, 2);
  std::vector<bool> ready = {false, false, true, false};
  auto is_ready = [&](int b) { return static_cast<bool>(ready[static_cast<size_t>(b)]); };
  EXPECT_EQ(d.ready_untaken(is_ready), 1);
  EXPECT_EQ(d.take(0, is_ready), 2);                // 0 and 1 are not ready yet
  EXPECT_EQ(d.take(1, is_ready), Dispatch::kWait);  // nothing ready, three left
  ready = {true, true, true, true};
  EXPECT_EQ(d.ready_untaken(is_ready), 3);
  EXPECT_EQ(d.take(1, is_ready), 0);
  EXPECT_EQ(d.take(1, is_ready), 1);  // a fast replica takes more
  EXPECT_EQ(d.take(0, is_ready), 3);
  EXPECT_EQ(d.take(0, is_ready), Dispatch::kDone);
  EXPECT_EQ(d.take(1, is_ready), Dispatch::kDone);
  EXPECT_TRUE(d.taken(0) && d.taken(1) && d.taken(2) && d.taken(3));
}

TEST(EncoderDispatchTest, RoundRobinGivesEncoderEEverySampleQWithQModEEqualE) {
  // Samples 10..14 in micro-batch order, 2 encoders: encoder 0 takes 10, 12, 14; encoder 1 takes 11, 13.
  EncoderDispatch d(EncoderDispatch::Policy::kRoundRobin, {10, 11, 12, 13, 14}, 2);
  EXPECT_EQ(d.peek(1), 11);
  EXPECT_EQ(d.take(1), 11);
  EXPECT_EQ(d.take(1), 13);
  EXPECT_EQ(d.take(1), EncoderDispatch::kNone);
  EXPECT_EQ(d.take(0), 10);
  EXPECT_EQ(d.take(0), 12);
  EXPECT_EQ(d.left(), 1);
  EXPECT_EQ(d.take(0), 14);
  EXPECT_EQ(d.take(0), EncoderDispatch::kNone);
  EXPECT_EQ(d.left(), 0);
}

TEST(EncoderDispatchTest, SharedQueueGivesWhicheverEncoderAsksTheHead) {
  EncoderDispatch d(EncoderDispatch::Policy::kSharedQueue, {10, 11, 12}, 2);
  EXPECT_EQ(d.peek(0), 10);
  EXPECT_EQ(d.peek(1), 10);
  EXPECT_EQ(d.take(1), 10);
  EXPECT_EQ(d.take(1), 11);  // a fast encoder takes more
  EXPECT_EQ(d.take(0), 12);
  EXPECT_EQ(d.take(0), EncoderDispatch::kNone);
  EXPECT_EQ(d.take(1), EncoderDispatch::kNone);
}

TEST(MicroBatchDispatchTest, TheRealExecutorsStepPlanIsTheRoundRobinPolicy) {
  const TinyFacts facts;
  const std::vector<TinySample> samples = tiny_step(facts, 7, 0, 32);
  const int encoders = 2, backbones = 3;
  auto plan = plan_step(samples, encoders, backbones, 256, true);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ASSERT_EQ(plan->bins.size() % backbones, 0u);
  // Micro-batch j's samples train on backbone rank E + j mod B; image sample q (in micro-batch order) is
  // encoded on encoder rank q mod E.
  for (size_t j = 0; j < plan->bins.size(); ++j) {
    for (int64_t i : plan->bins[j])
      EXPECT_EQ(plan->backbone_of[static_cast<size_t>(i)], encoders + static_cast<int>(j % backbones)) << j;
  }
  ASSERT_FALSE(plan->order.empty());
  for (size_t q = 0; q < plan->order.size(); ++q)
    EXPECT_EQ(plan->encoder_of[static_cast<size_t>(plan->order[q])], static_cast<int>(q % encoders)) << q;
}

}  // namespace
}  // namespace clustertwin::models::flowtrain
