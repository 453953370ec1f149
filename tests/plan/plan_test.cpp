#include "models/plan/plan.h"

#include <gtest/gtest.h>

namespace clustertwin::models {
namespace {

TEST(PlanNamesTest, EveryNameParsesBackToItsValue) {
  for (TaskKind kind :
       {TaskKind::kCompute, TaskKind::kCollective, TaskKind::kCopy, TaskKind::kLookup, TaskKind::kHost}) {
    EXPECT_EQ(task_kind_from_name(task_kind_name(kind)), kind) << task_kind_name(kind);
  }
  for (CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kAllToAll, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
        CollectiveOp::kBroadcast, CollectiveOp::kSend, CollectiveOp::kRecv}) {
    EXPECT_EQ(collective_op_from_name(collective_op_name(op)), op) << collective_op_name(op);
  }
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling,
                              Algorithm::kHierarchical, Algorithm::kDirect}) {
    EXPECT_EQ(algorithm_from_name(algorithm_name(algorithm)), algorithm) << algorithm_name(algorithm);
  }
}

TEST(PlanNamesTest, NamesAreTheDocumentedOnes) {
  EXPECT_EQ(task_kind_name(TaskKind::kCollective), "collective");
  EXPECT_EQ(collective_op_name(CollectiveOp::kReduceScatter), "reducescatter");
  EXPECT_EQ(algorithm_name(Algorithm::kHalvingDoubling), "halving_doubling");
}

TEST(PlanNamesTest, UnknownNamesAreRejected) {
  EXPECT_EQ(task_kind_from_name("gpu"), std::nullopt);
  EXPECT_EQ(task_kind_from_name("Compute"), std::nullopt);  // names are case-sensitive
  EXPECT_EQ(collective_op_from_name("all_reduce"), std::nullopt);
  EXPECT_EQ(algorithm_from_name(""), std::nullopt);
}

TEST(RunsOnTest, FollowsTheRankRanges) {
  Task everywhere;
  Task split;
  split.ranks = {{0, 8}, {16, -1}};  // [0, 8) and [16, world)
  struct Case {
    int rank;
    bool split_runs;
  };
  for (const Case& c :
       {Case{0, true}, Case{7, true}, Case{8, false}, Case{15, false}, Case{16, true}, Case{23, true}}) {
    EXPECT_TRUE(runs_on(everywhere, c.rank, 24)) << "rank " << c.rank;
    EXPECT_EQ(runs_on(split, c.rank, 24), c.split_runs) << "rank " << c.rank;
  }
}

TEST(GroupMembersTest, EachKindOfGroup) {
  struct Case {
    const char* what;
    GroupSpec spec;
    int rank;
    int world;
    int devices_per_node;
    std::vector<int> expected;
  };
  using Kind = GroupSpec::Kind;
  const Case cases[] = {
      // world: every rank, whoever asks.
      {"world", {Kind::kWorld, 0}, 5, 8, 4, {0, 1, 2, 3, 4, 5, 6, 7}},
      // node: rank 5 on nodes of 4 is on node floor(5/4) = 1, ranks 4..7.
      {"node", {Kind::kNode, 0}, 5, 8, 4, {4, 5, 6, 7}},
      // node: a world of 4 smaller than a node of 8 is one partial node.
      {"partial node", {Kind::kNode, 0}, 2, 4, 8, {0, 1, 2, 3}},
      // block(2): rank 5 is in block floor(5/2) = 2, ranks 4..5.
      {"block", {Kind::kBlock, 2}, 5, 8, 4, {4, 5}},
      // block(8) of a world of 8: the world.
      {"block of the world", {Kind::kBlock, 8}, 3, 8, 4, {0, 1, 2, 3, 4, 5, 6, 7}},
      // stride(4): ranks equal to 5 mod 4 = 1 below 16: 1, 5, 9, 13 (one rail).
      {"stride", {Kind::kStride, 4}, 5, 16, 4, {1, 5, 9, 13}},
      // stride(8) of a world of 8: every rank alone.
      {"stride of the world", {Kind::kStride, 8}, 3, 8, 8, {3}},
      // stride(2) within 8: rank 13 is in the block 8..15, its residue 1: 9, 11, 13, 15 (one stage's DP group).
      {"stride within a span", {Kind::kStride, 2, 8}, 13, 16, 4, {9, 11, 13, 15}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(group_members(c.spec, c.rank, c.world, c.devices_per_node), c.expected) << c.what;
    EXPECT_EQ(group_first(c.spec, c.rank, c.world, c.devices_per_node), c.expected.front()) << c.what;
    EXPECT_EQ(group_size(c.spec, c.rank, c.world, c.devices_per_node), static_cast<int>(c.expected.size())) << c.what;
  }
}

// group_first and group_size are the list's first and size for every rank of odd worlds too (a stride that does not
// divide the world: its first residues have one member more).
TEST(GroupMembersTest, FirstAndSizeWithoutTheList) {
  using Kind = GroupSpec::Kind;
  for (GroupSpec spec : {GroupSpec{Kind::kWorld, 0}, GroupSpec{Kind::kNode, 0}, GroupSpec{Kind::kBlock, 3},
                         GroupSpec{Kind::kStride, 3}, GroupSpec{Kind::kStride, 4}, GroupSpec{Kind::kStride, 2, 4}}) {
    for (int world : {1, 7, 12}) {
      for (int rank = 0; rank < world; ++rank) {
        const std::vector<int> members = group_members(spec, rank, world, 4);
        EXPECT_EQ(group_first(spec, rank, world, 4), members.front()) << rank << " of " << world;
        EXPECT_EQ(group_size(spec, rank, world, 4), static_cast<int>(members.size())) << rank << " of " << world;
      }
    }
  }
}

}  // namespace
}  // namespace clustertwin::models
