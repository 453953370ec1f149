// The structure and world checks, one case per class of bad plan asserting
// the message text, then topological order and critical path.

#include "models/plan/plan_validator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

namespace clustertwin::models {
namespace {

Task compute(std::string name, int stream, std::vector<int> deps = {}) {
  Task t;
  t.name = std::move(name);
  t.stream = stream;
  t.deps = std::move(deps);
  return t;
}

Task collective(std::string name, int stream, Collective c, int64_t bytes = 1024, std::vector<int> deps = {}) {
  Task t = compute(std::move(name), stream, std::move(deps));
  t.kind = TaskKind::kCollective;
  t.bytes = bytes;
  t.collective = std::move(c);
  return t;
}

Collective op(CollectiveOp o, GroupSpec group = {}) {
  Collective c;
  c.op = o;
  c.group = group;
  return c;
}

Collective point_to_point(CollectiveOp o, int peer_offset, int tag) {
  Collective c = op(o);
  c.peer_offset = peer_offset;
  c.tag = tag;
  return c;
}

// Streams "compute" (0) and "comm" (1); ids set to positions.
Plan plan_of(std::vector<Task> tasks) {
  Plan plan;
  plan.system = "test";
  plan.streams = {"compute", "comm"};
  plan.tasks = std::move(tasks);
  for (size_t i = 0; i < plan.tasks.size(); ++i)
    plan.tasks[i].id = static_cast<int>(i);
  return plan;
}

// fwd -> bwd on compute, ar after bwd on comm.
Plan base_plan() {
  return plan_of(
      {compute("fwd", 0), compute("bwd", 0, {0}), collective("ar", 1, op(CollectiveOp::kAllReduce), 1024, {1})});
}

TEST(ValidatePlanTest, AcceptsAGoodPlan) {
  EXPECT_TRUE(validate_plan(base_plan(), "plan.json").is_ok());
  Plan plan = base_plan();
  plan.tasks[0].prev_step_deps = {0, 2};  // a step may wait for its own task of the step before
  EXPECT_TRUE(validate_plan(plan, "plan.json").is_ok());
}

TEST(ValidatePlanTest, OneMessagePerClassOfMistake) {
  struct Case {
    const char* what;
    std::function<void(Plan&)> spoil;
    std::string message;
  };
  const Case cases[] = {
      {"no streams", [](Plan& p) { p.streams.clear(); }, "plan.json: the plan has no streams (it needs at least one)"},
      {"empty stream name", [](Plan& p) { p.streams[1] = ""; }, "plan.json: stream 1 has an empty name"},
      {"duplicate stream", [](Plan& p) { p.streams[1] = "compute"; },
       "plan.json: streams 0 and 1 are both named 'compute'"},
      {"id not the position", [](Plan& p) { p.tasks[2].id = 5; },
       "plan.json: tasks[2] has id 5 (must be its position)"},
      {"empty name", [](Plan& p) { p.tasks[1].name = ""; }, "plan.json: tasks[1] has an empty name"},
      {"duplicate name", [](Plan& p) { p.tasks[2].name = "fwd"; }, "plan.json: tasks 0 and 2 are both named 'fwd'"},
      {"unknown stream", [](Plan& p) { p.tasks[1].stream = 2; },
       "plan.json: task 'bwd': stream 2 does not exist (the plan has 2 streams)"},
      {"unknown dep", [](Plan& p) { p.tasks[1].deps = {7}; },
       "plan.json: task 'bwd': dep 7 does not exist (the plan has 3 tasks)"},
      {"unknown prev_step_dep", [](Plan& p) { p.tasks[0].prev_step_deps = {-1}; },
       "plan.json: task 'fwd': prev_step_dep -1 does not exist (the plan has 3 tasks)"},
      {"self dep",
       [](Plan& p) {
         p.tasks[1].deps = {0, 1};
       },
       "plan.json: task 'bwd': depends on itself"},
      {"dep listed twice",
       [](Plan& p) {
         p.tasks[2].deps = {1, 0, 1};
       },
       "plan.json: task 'ar': dep 'bwd' is listed twice"},
      {"negative flops", [](Plan& p) { p.tasks[0].flops = -5; },
       "plan.json: task 'fwd': flops -5 must be finite and >= 0"},
      {"nan flops", [](Plan& p) { p.tasks[0].flops = std::nan(""); },
       "plan.json: task 'fwd': flops nan must be finite and >= 0"},
      {"negative bytes", [](Plan& p) { p.tasks[2].bytes = -1; }, "plan.json: task 'ar': bytes -1 must be >= 0"},
      {"micro_batch below -1", [](Plan& p) { p.tasks[0].micro_batch = -3; },
       "plan.json: task 'fwd': micro_batch -3 must be >= -1"},
      {"negative batch_offset", [](Plan& p) { p.tasks[0].batch_offset = -1; },
       "plan.json: task 'fwd': batch_offset -1 must be >= 0"},
      {"negative requests", [](Plan& p) { p.tasks[0].requests = -1; },
       "plan.json: task 'fwd': requests -1 must be >= 0"},
      {"empty rank range",
       [](Plan& p) {
         p.tasks[0].ranks = {{0, 4}, {3, 3}};
       },
       "plan.json: task 'fwd': rank range [3, 3) is not [begin, end) with 0 <= begin < end (or end -1)"},
      {"collective without descriptor", [](Plan& p) { p.tasks[2].collective.reset(); },
       "plan.json: task 'ar': kind collective needs a 'collective' descriptor"},
      {"descriptor on a copy",
       [](Plan& p) {
         p.tasks[1].kind = TaskKind::kCopy;
         p.tasks[1].collective = Collective{};
       },
       "plan.json: task 'bwd': kind copy must not have a 'collective' descriptor"},
      {"zero block",
       [](Plan& p) {
         p.tasks[2].collective->group = {GroupSpec::Kind::kBlock, 0};
       },
       "plan.json: task 'ar': group block(0): the size must be >= 1"},
      {"world with a size", [](Plan& p) { p.tasks[2].collective->group.size = 4; },
       "plan.json: task 'ar': group world takes no size (got 4)"},
      {"span not a multiple of the stride",
       [](Plan& p) {
         p.tasks[2].collective->group = {GroupSpec::Kind::kStride, 2, 3};
       },
       "plan.json: task 'ar': group stride(2 within 3): the span 3 must be 0 (the world) or a positive multiple of the "
       "stride"},
      {"negative root", [](Plan& p) { p.tasks[2].collective->root = -1; },
       "plan.json: task 'ar': root -1 must be >= 0"},
      {"split_bytes on an allreduce",
       [](Plan& p) {
         p.tasks[2].collective->split_bytes = {512, 512};
       },
       "plan.json: task 'ar': split_bytes is only for alltoall, not allreduce"},
      {"negative split",
       [](Plan& p) {
         p.tasks[2].collective->op = CollectiveOp::kAllToAll;
         p.tasks[2].collective->split_bytes = {1025, -1};
       },
       "plan.json: task 'ar': split_bytes[1] is -1 (must be >= 0)"},
      // fwd waits for ar, ar for bwd, bwd for fwd: all through deps.
      {"cycle through deps", [](Plan& p) { p.tasks[0].deps = {2}; },
       "plan.json: dependency cycle: 'fwd' -> 'bwd' -> 'ar' -> 'fwd'"},
      // fwd waits for bwd, but bwd comes after fwd on the compute stream.
      {"cycle through stream order",
       [](Plan& p) {
         p.tasks[1].deps.clear();
         p.tasks[0].deps = {1};
       },
       "plan.json: dependency cycle: 'fwd' -(stream order)-> 'bwd' -> 'fwd'"},
  };
  for (const Case& c : cases) {
    Plan plan = base_plan();
    c.spoil(plan);
    const Status status = validate_plan(plan, "plan.json");
    EXPECT_EQ(status.message(), c.message) << c.what;
    EXPECT_EQ(status.exit_code(), 2) << c.what;
  }
}

TEST(ValidatePlanForWorldTest, AcceptsGroupsThatTileTheWorld) {
  const Plan plan = plan_of({
      collective("ar", 1, op(CollectiveOp::kAllReduce)),
      collective("node_ar", 1, op(CollectiveOp::kAllReduce, {GroupSpec::Kind::kNode, 0})),
      collective("rail_ag", 1, op(CollectiveOp::kAllGather, {GroupSpec::Kind::kStride, 4})),
      // Ranks [0, 4) and [8, 12) are two whole block(4) groups; the others run no part of it.
      [] {
        Task t = collective("half_rs", 1, op(CollectiveOp::kReduceScatter, {GroupSpec::Kind::kBlock, 4}));
        t.ranks = {{0, 4}, {8, 12}};
        return t;
      }(),
      // A ring: each rank sends to the next and receives from the one before.
      collective("ring_send", 1, point_to_point(CollectiveOp::kSend, 1, 7)),
      collective("ring_recv", 1, point_to_point(CollectiveOp::kRecv, -1, 7)),
      // Point to point needs no group: rank 0 alone sends to rank 1 alone.
      [] {
        Task t = collective("first_send", 1, point_to_point(CollectiveOp::kSend, 1, 9));
        t.ranks = {{0, 1}};
        return t;
      }(),
      [] {
        Task t = collective("first_recv", 1, point_to_point(CollectiveOp::kRecv, -1, 9));
        t.ranks = {{1, 2}};
        return t;
      }(),
  });
  ASSERT_TRUE(validate_plan(plan, "plan.json").is_ok());
  // 16 ranks on nodes of 4.
  const Status status = validate_plan_for_world(plan, "plan.json", 16, 4);
  EXPECT_TRUE(status.is_ok()) << status.message();
  // A world of 2 smaller than a node of 8 is one (partial) node; stride(4)
  // does not divide it, so leave that task out.
  Plan small = plan;
  small.tasks.erase(small.tasks.begin() + 2, small.tasks.begin() + 4);
  for (size_t i = 0; i < small.tasks.size(); ++i)
    small.tasks[i].id = static_cast<int>(i);
  const Status small_status = validate_plan_for_world(small, "plan.json", 2, 8);
  EXPECT_TRUE(small_status.is_ok()) << small_status.message();
}

TEST(ValidatePlanForWorldTest, OneMessagePerClassOfMistake) {
  using Kind = GroupSpec::Kind;
  struct Case {
    const char* what;
    std::vector<Task> tasks;
    int world;
    int devices_per_node;
    std::string message;
  };
  const auto with_ranks = [](Task t, std::vector<RankRange> ranks) {
    t.ranks = std::move(ranks);
    return t;
  };
  Collective split_a2a = op(CollectiveOp::kAllToAll, {Kind::kBlock, 4});
  split_a2a.split_bytes = {256, 256, 512};
  Collective uneven_a2a = split_a2a;
  uneven_a2a.split_bytes = {256, 256, 256, 257};
  Collective bcast = op(CollectiveOp::kBroadcast, {Kind::kBlock, 4});
  bcast.root = 4;
  const Case cases[] = {
      {"empty world", {compute("fwd", 0)}, 0, 8, "plan.json: world size 0 must be >= 1"},
      {"no devices per node", {compute("fwd", 0)}, 8, 0, "plan.json: devices per node 0 must be >= 1"},
      {"rank range beyond the world",
       {with_ranks(compute("fwd", 0), {{4, 12}})},
       8,
       8,
       "plan.json: task 'fwd': rank range [4, 12) does not fit in the world of 8 ranks"},
      {"rank range starting at the world's end",
       {with_ranks(compute("fwd", 0), {{8, -1}})},
       8,
       8,
       "plan.json: task 'fwd': rank range [8, -1) does not fit in the world of 8 ranks"},
      {"block not dividing the world",
       {collective("ar", 1, op(CollectiveOp::kAllReduce, {Kind::kBlock, 3}))},
       8,
       8,
       "plan.json: task 'ar': group block(3) does not divide the world of 8 ranks"},
      {"stride not dividing the world",
       {collective("ar", 1, op(CollectiveOp::kAllReduce, {Kind::kStride, 5}))},
       8,
       4,
       "plan.json: task 'ar': group stride(5) does not divide the world of 8 ranks"},
      {"partial last node",
       {collective("ar", 1, op(CollectiveOp::kAllReduce, {Kind::kNode, 0}))},
       12,
       8,
       "plan.json: task 'ar': group node: the world of 12 ranks is not a whole number of nodes of 8 ranks"},
      // Ranks 0..2 run it; rank 3 is the first member of the world group that does not.
      {"partial world group",
       {with_ranks(collective("ar", 1, op(CollectiveOp::kAllReduce)), {{0, 3}})},
       8,
       8,
       "plan.json: task 'ar': collective joined by only part of its group: rank 3 is in the world group of rank 0 but "
       "does not run the task"},
      // block(4) groups {0..3} (all run) and {4..7}: 4 and 5 run, 6 does not.
      {"partial block group",
       {with_ranks(collective("ar", 1, op(CollectiveOp::kAllReduce, {Kind::kBlock, 4})), {{0, 6}})},
       8,
       8,
       "plan.json: task 'ar': collective joined by only part of its group: rank 6 is in the block(4) group of rank 4 "
       "but does not run the task"},
      {"split_bytes of the wrong length",
       {collective("a2a", 1, split_a2a)},
       8,
       8,
       "plan.json: task 'a2a': split_bytes has 3 entries, but its block(4) group has 4 members"},
      // 256 + 256 + 256 + 257 = 1025 against bytes 1024.
      {"split_bytes not summing to bytes",
       {collective("a2a", 1, uneven_a2a)},
       8,
       8,
       "plan.json: task 'a2a': split_bytes sums to 1025, but bytes is 1024"},
      {"broadcast root outside the group",
       {collective("bc", 1, bcast)},
       8,
       8,
       "plan.json: task 'bc': root 4 is outside the group: its block(4) group has 4 members"},
      {"peer is the rank itself",
       {collective("s", 1, point_to_point(CollectiveOp::kSend, 8, 0))},
       8,
       8,
       "plan.json: task 's': peer_offset 8 makes rank 0 its own peer"},
      // Rank 1 + 1 = 2 is in block {2, 3}, not in rank 1's block {0, 1}.
      {"peer outside the group",
       {[] {
         Collective c = point_to_point(CollectiveOp::kSend, 1, 0);
         c.group = {Kind::kBlock, 2};
         return collective("s", 1, c);
       }()},
       4,
       4,
       "plan.json: task 's': peer rank 2 of rank 1 is outside its block(2) group"},
      {"send without recv",
       {collective("x", 1, point_to_point(CollectiveOp::kSend, 1, 3))},
       2,
       8,
       "plan.json: send 'x' from rank 0 to rank 1 (tag 3) has no matching recv"},
      // Rank r receives from r - 1 mod 4; channels are reported by source rank: 0 -> 1 first.
      {"recv without send",
       {collective("y", 1, point_to_point(CollectiveOp::kRecv, -1, 0))},
       4,
       8,
       "plan.json: recv 'y' at rank 1 from rank 0 (tag 0) has no matching send"},
      {"tags that differ",
       {collective("x", 1, point_to_point(CollectiveOp::kSend, 1, 3)),
        collective("y", 1, point_to_point(CollectiveOp::kRecv, -1, 4))},
       2,
       8,
       "plan.json: send 'x' from rank 0 to rank 1 (tag 3) has no matching recv"},
      // Only rank 0 sends, but every rank receives: rank 0's recv (from rank 1) is unmatched.
      {"recv on ranks that get no send",
       {with_ranks(collective("x", 1, point_to_point(CollectiveOp::kSend, 1, 0)), {{0, 1}}),
        collective("y", 1, point_to_point(CollectiveOp::kRecv, 1, 0))},
       2,
       8,
       "plan.json: recv 'y' at rank 0 from rank 1 (tag 0) has no matching send"},
  };
  for (const Case& c : cases) {
    const Plan plan = plan_of(c.tasks);
    ASSERT_TRUE(validate_plan(plan, "plan.json").is_ok()) << c.what << ": " << validate_plan(plan, "p").message();
    const Status status = validate_plan_for_world(plan, "plan.json", c.world, c.devices_per_node);
    EXPECT_EQ(status.message(), c.message) << c.what;
    EXPECT_EQ(status.exit_code(), 2) << c.what;
  }
}

TEST(TopologicalOrderTest, LowestReadyIdFirst) {
  // Independent tasks on three streams: nothing orders them but their ids.
  Plan independent = plan_of({compute("a", 0), compute("b", 1), compute("c", 1)});
  independent.streams.push_back("h2d");
  independent.tasks[2].stream = 2;
  EXPECT_EQ(topological_order(independent), (std::vector<int>{0, 1, 2}));
  // late (0) waits for y (2), which follows x (1) on the compute stream: x, y, late.
  const Plan plan = plan_of({compute("late", 1, {2}), compute("x", 0), compute("y", 0)});
  EXPECT_EQ(topological_order(plan), (std::vector<int>{1, 2, 0}));
}

TEST(CriticalPathTest, LongestChainOfDepsAndStreamOrder) {
  std::map<std::string, double> seconds = {{"a", 1}, {"b", 2}, {"c", 5}};
  const auto duration = [&seconds](const Task& t) { return seconds.at(t.name); };
  // a(1 s) -> b(2 s) and a -> c(5 s) on separate streams: critical path 1 + 5 = 6 s.
  EXPECT_DOUBLE_EQ(
      critical_path_seconds(plan_of({compute("a", 0), compute("b", 0, {0}), compute("c", 1, {0})}), duration), 6.0);
  // The same three on one stream run one at a time: 1 + 2 + 5 = 8 s.
  EXPECT_DOUBLE_EQ(critical_path_seconds(plan_of({compute("a", 0), compute("b", 0), compute("c", 0)}), duration), 8.0);
  // a(1 s) and b(2 s) on separate streams, no deps: the longer one, 2 s.
  EXPECT_DOUBLE_EQ(critical_path_seconds(plan_of({compute("a", 0), compute("b", 1)}), duration), 2.0);
  EXPECT_DOUBLE_EQ(critical_path_seconds(plan_of({}), duration), 0.0);
}

}  // namespace
}  // namespace clustertwin::models
