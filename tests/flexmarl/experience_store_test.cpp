// The experience store: rows fill field by field, trainers take whole
// micro-batches of complete rows of their own version, and every broken rule
// (a rollout on a stale policy after a late publish, a read across versions,
// a field written twice) is refused with one line naming it.

#include "models/flexmarl/experience_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace clustertwin::models::flexmarl {
namespace {

const std::vector<std::string> kFields = {"prompt", "response", "reward", "logp"};

// Writes every field of (id, version).
void fill(ExperienceTable& t, const SampleId& id, int64_t version) {
  ASSERT_TRUE(t.insert(id, version).is_ok());
  ASSERT_TRUE(t.put(id, version, "prompt", std::string("2+3")).is_ok());
  ASSERT_TRUE(t.put(id, version, "response", TensorRef{1, 42, {17}, "int64"}).is_ok());
  ASSERT_TRUE(t.put(id, version, "reward", 1.0).is_ok());
  ASSERT_TRUE(t.put(id, version, "logp", TensorRef{1, 43, {17}, "float32"}).is_ok());
}

TEST(SampleIdTest, RoundTripsAndRejectsMalformedText) {
  const SampleId id{7, 1, 0};
  EXPECT_EQ(id.str(), "7_1_0");
  EXPECT_EQ(*parse_sample_id("7_1_0"), id);
  EXPECT_LT((SampleId{7, 0, 9}), (SampleId{7, 1, 0}));  // input, then turn, then trajectory
  for (const char* bad : {"7_1", "7_1_", "a_1_0", "7_-1_0", "7_1_0_2", ""}) {
    EXPECT_EQ(parse_sample_id(bad).status().message(),
              "sample id '" + std::string(bad) + "': expected INPUT_TURN_TRAJECTORY, three non-negative integers");
  }
}

TEST(ExperienceTableTest, RowsFillFieldByFieldAndTrainersTakeWholeMicroBatches) {
  ExperienceTable t("solver", kFields);
  ASSERT_TRUE(t.insert({0, 0, 0}, 0).is_ok());
  ASSERT_TRUE(t.put({0, 0, 0}, 0, "prompt", std::string("2+3")).is_ok());
  EXPECT_TRUE(t.ready({0, 0, 0}, 0, "prompt"));
  EXPECT_FALSE(t.ready({0, 0, 0}, 0, "reward"));
  EXPECT_FALSE(t.complete({0, 0, 0}, 0));
  for (int64_t input = 1; input <= 4; ++input)
    fill(t, {input, 0, 0}, 0);
  // Four complete rows: a micro-batch of 5 is not there yet, one of 3 is, in id order.
  EXPECT_TRUE(t.take(0, 5).empty());
  EXPECT_EQ(t.take(0, 3), (std::vector<SampleId>{{1, 0, 0}, {2, 0, 0}, {3, 0, 0}}));
  EXPECT_TRUE(t.take(0, 2).empty());  // one complete row left untaken
  EXPECT_EQ(t.take(0, 2, /*all_or_nothing=*/false), (std::vector<SampleId>{{4, 0, 0}}));
  EXPECT_EQ(t.counts(0).rows, 5u);
  EXPECT_EQ(t.counts(0).complete, 4u);
  EXPECT_EQ(t.counts(0).taken, 4u);
  // Small fields by value, tensors by reference.
  EXPECT_EQ(std::get<std::string>(*t.get({2, 0, 0}, 0, "prompt")), "2+3");
  EXPECT_EQ(std::get<TensorRef>(*t.get({2, 0, 0}, 0, "response")), (TensorRef{1, 42, {17}, "int64"}));
  ASSERT_TRUE(t.mark_trained({2, 0, 0}, 0).is_ok());
  EXPECT_EQ(t.counts(0).rows, 4u);
}

// The trainer publishes version 1 while an inference instance still runs version 0 (its weight load is late):
// its next write is caught, whether a new row or a field of a row it began before the publish.
TEST(ExperienceTableTest, ALatePublishIsCaughtAtTheStaleRolloutsNextWrite) {
  ExperienceTable t("planner", kFields);
  ASSERT_TRUE(t.insert({3, 0, 1}, 0).is_ok());
  ASSERT_TRUE(t.publish(1).is_ok());
  EXPECT_EQ(t.put({3, 0, 1}, 0, "response", TensorRef{}).message(),
            "experience store: agent planner: sample 3_0_1 of policy version 0: field 'response' written while "
            "version 1 is published (a rollout on a stale policy)");
  EXPECT_EQ(t.insert({4, 0, 0}, 0).message(),
            "experience store: agent planner: sample 4_0_0 of policy version 0: written while version 1 is "
            "published (a rollout on a stale policy)");
  EXPECT_TRUE(t.insert({4, 0, 0}, 1).is_ok());  // the current policy writes
  EXPECT_EQ(t.publish(3).message(),
            "experience store: agent planner: publishing version 3 after 1 (versions go up by one)");
}

TEST(ExperienceTableTest, EveryBrokenRuleIsOneLine) {
  ExperienceTable t("checker", kFields);
  fill(t, {1, 2, 0}, 0);
  EXPECT_EQ(t.get({1, 2, 0}, 1, "reward").status().message(),
            "experience store: agent checker: sample 1_2_0 of policy version 0: read by policy version 1");
  EXPECT_EQ(t.put({1, 2, 0}, 0, "reward", 0.0).message(),
            "experience store: agent checker: sample 1_2_0 of policy version 0: field 'reward' written twice");
  EXPECT_EQ(t.put({1, 2, 0}, 0, "advantage", 0.0).message(),
            "experience store: agent checker: sample 1_2_0 of policy version 0: no field 'advantage' in this table");
  EXPECT_EQ(t.put({9, 0, 0}, 0, "reward", 0.0).message(),
            "experience store: agent checker: sample 9_0_0 of policy version 0: field 'reward' written before insert");
  EXPECT_EQ(t.insert({1, 2, 0}, 0).message(),
            "experience store: agent checker: sample 1_2_0 of policy version 0: inserted twice");
  EXPECT_EQ(t.mark_trained({1, 2, 0}, 0).message(),
            "experience store: agent checker: sample 1_2_0 of policy version 0: marked trained without being taken");
  ASSERT_TRUE(t.insert({5, 0, 0}, 0).is_ok());
  EXPECT_EQ(
      t.get({5, 0, 0}, 0, "reward").status().message(),
      "experience store: agent checker: sample 5_0_0 of policy version 0: field 'reward' read before it is ready");
}

// Rollout threads write distinct samples while a trainer thread takes micro-batches: every row is taken once.
TEST(ExperienceTableTest, ConcurrentWritersAndATakerAgree) {
  ExperienceTable t("solver", kFields);
  constexpr int kWriters = 4, kPerWriter = 200, kMicroBatch = 16;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&t, w] {
      for (int i = 0; i < kPerWriter; ++i)
        fill(t, {i, 0, w}, 0);
    });
  }
  std::vector<SampleId> taken;
  while (taken.size() < static_cast<size_t>(kWriters * kPerWriter)) {
    for (const SampleId& id : t.take(0, kMicroBatch))
      taken.push_back(id);
  }
  for (auto& w : writers)
    w.join();
  std::sort(taken.begin(), taken.end());
  EXPECT_EQ(std::adjacent_find(taken.begin(), taken.end()), taken.end());  // 800 rows (divisible by 16), each once
  EXPECT_EQ(t.counts(0).taken, static_cast<size_t>(kWriters * kPerWriter));
}

TEST(ExperienceStoreTest, OneTablePerAgent) {
  ExperienceStore store;
  ASSERT_TRUE(store.add_agent("planner", kFields).is_ok());
  ASSERT_TRUE(store.add_agent("solver", kFields).is_ok());
  EXPECT_EQ(store.add_agent("solver", kFields).message(), "experience store: agent 'solver' added twice");
  EXPECT_EQ((*store.table("solver"))->agent(), "solver");
  EXPECT_EQ(store.table("critic").status().message(), "experience store: no agent 'critic' (agents: planner, solver)");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
