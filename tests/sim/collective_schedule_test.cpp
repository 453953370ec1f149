#include "sim/core/collective_schedule.h"

#include <gtest/gtest.h>

namespace clustertwin::sim {
namespace {

using models::Algorithm;
using models::CollectiveOp;

std::vector<int> ranks(int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i)
    r[i] = i;
  return r;
}

CollectiveSchedule schedule(CollectiveOp op, Algorithm algorithm, int64_t bytes, int n, int per_node = 1) {
  models::Collective c;
  c.op = op;
  c.algorithm = algorithm;
  auto s = build_schedule(
      c, bytes, ranks(n), [per_node](int r) { return r / per_node; }, "t");
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? *s : CollectiveSchedule();
}

TEST(CollectiveScheduleTest, RingAllReduceIsOnePhaseOfTwoNMinusOneRounds) {
  const CollectiveSchedule s = schedule(CollectiveOp::kAllReduce, Algorithm::kRing, 800, 8);
  ASSERT_EQ(s.phases.size(), 1u);
  EXPECT_EQ(s.phases[0].repeats, 14);                 // 2 (n - 1)
  EXPECT_EQ(s.message_count(), 14u * 8);              // n messages a round
  EXPECT_DOUBLE_EQ(s.total_bytes(), 14 * 8 * 100.0);  // S / n = 100 each
}

TEST(CollectiveScheduleTest, AllToAllIsCompact) {
  const CollectiveSchedule s = schedule(CollectiveOp::kAllToAll, Algorithm::kDirect, 1536 * 10, 1536);
  ASSERT_EQ(s.phases.size(), 1u);
  EXPECT_EQ(s.phases[0].round.messages.size(), 0u);  // kept as all-pairs, not 2.4 million messages
  EXPECT_EQ(s.message_count(), 1536u * 1535);
}

TEST(CollectiveScheduleTest, TreeAllReduceHasTwoLogNPhases) {
  const CollectiveSchedule s = schedule(CollectiveOp::kAllReduce, Algorithm::kTree, 64, 8);
  EXPECT_EQ(s.phases.size(), 6u);     // 3 reduce levels + 3 broadcast levels
  EXPECT_EQ(s.message_count(), 14u);  // n - 1 up, n - 1 down
  EXPECT_DOUBLE_EQ(s.total_bytes(), 14 * 64.0);
}

TEST(CollectiveScheduleTest, HalvingDoublingMovesTwiceNMinusOneOverNOfTheBuffer) {
  const CollectiveSchedule s = schedule(CollectiveOp::kAllReduce, Algorithm::kHalvingDoubling, 1024, 8);
  EXPECT_EQ(s.phases.size(), 6u);
  // Per rank: 512 + 256 + 128 halving, the same doubling: 2 (n-1)/n S = 1792.
  EXPECT_DOUBLE_EQ(s.total_bytes(), 8 * 1792.0);
}

TEST(CollectiveScheduleTest, HierarchicalAllReduceStaysInsideNodesExceptOneShardRing) {
  const CollectiveSchedule s = schedule(CollectiveOp::kAllReduce, Algorithm::kHierarchical, 1600, 16, 4);
  ASSERT_EQ(s.phases.size(), 3u);
  EXPECT_EQ(s.phases[0].repeats, 3);  // m - 1 intra-node rounds
  EXPECT_EQ(s.phases[1].repeats, 6);  // 2 (k - 1) rounds across 4 nodes
  EXPECT_EQ(s.phases[2].repeats, 3);
  for (const Message& m : s.phases[1].round.messages) {
    EXPECT_EQ(m.src % 4, m.dst % 4);  // same local index: one ring per rail
    EXPECT_NE(m.src / 4, m.dst / 4);
    EXPECT_DOUBLE_EQ(m.bytes, 100.0);  // S / n
  }
}

TEST(CollectiveScheduleTest, HierarchicalAllToAllMovesTheSameBytesAsDirect) {
  // Direct: n (n-1) messages of S/n. Hierarchical forwards the part bound for
  // other nodes twice: once inside the node, once across.
  const CollectiveSchedule h = schedule(CollectiveOp::kAllToAll, Algorithm::kHierarchical, 1600, 16, 4);
  ASSERT_EQ(h.phases.size(), 2u);
  // Intra: 16 ranks x 3 local peers x k S/n (400); across: 4 x 3 node pairs x 4 rails x m S/n (400).
  EXPECT_DOUBLE_EQ(h.total_bytes(), 16 * 3 * 400.0 + 12 * 4 * 400.0);
}

TEST(CollectiveScheduleTest, UnevenAllToAllUsesSplitBytes) {
  models::Collective c;
  c.op = CollectiveOp::kAllToAll;
  c.split_bytes = {10, 20, 30};
  auto s = build_schedule(
      c, 60, ranks(3), [](int r) { return r; }, "t");
  ASSERT_TRUE(s.is_ok());
  // Each rank sends split[j] to every other j: rank 0 sends 20 + 30, rank 1 10 + 30, rank 2 10 + 20.
  EXPECT_DOUBLE_EQ(s->total_bytes(), 50 + 40 + 30);
}

TEST(CollectiveScheduleTest, RejectsWhatDoesNotApply) {
  models::Collective c;
  c.op = CollectiveOp::kAllToAll;
  c.algorithm = Algorithm::kTree;
  auto s = build_schedule(
      c, 60, ranks(4), [](int r) { return r; }, "emb_a2a");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().message(),
            "task 'emb_a2a': algorithm 'tree' does not apply to alltoall (allowed: direct, hierarchical)");
  c.op = CollectiveOp::kAllReduce;
  c.algorithm = Algorithm::kHierarchical;
  auto uneven = build_schedule(
      c, 60, {0, 1, 2}, [](int r) { return r < 2 ? 0 : 1; }, "ar");
  ASSERT_FALSE(uneven.is_ok());
  EXPECT_NE(uneven.status().message().find("on nodes holding different numbers of group members"), std::string::npos);
}

TEST(CollectiveScheduleTest, GroupOfOneMovesNothing) {
  EXPECT_EQ(schedule(CollectiveOp::kAllReduce, Algorithm::kRing, 1000, 1).message_count(), 0u);
}

}  // namespace
}  // namespace clustertwin::sim
