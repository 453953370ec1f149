// Plans as JSON: the round trip, the shipped examples, and one case per
// class of bad file, each asserting the message text: a user must find the
// task, the field and the bad value from the one line.

#include "models/plan/plan_json.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/file_io.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models {
namespace {

// A plan file with two streams and the given task objects.
std::string with_tasks(const std::string& tasks) {
  return R"({"system": "t", "variant": "v", "streams": ["compute", "comm"], "tasks": [)" + tasks + "]}";
}

std::string error_for(const std::string& text) {
  const StatusOr<Plan> plan = plan_from_json(text, "plan.json");
  EXPECT_FALSE(plan.is_ok()) << text;
  if (plan.is_ok()) return "(parsed)";
  EXPECT_EQ(plan.status().exit_code(), 2) << plan.status().message();
  EXPECT_EQ(plan.status().message().find('\n'), std::string::npos) << "not one line: " << plan.status().message();
  return plan.status().message();
}

// A plan that sets every field to something other than its default.
Plan full_plan() {
  Plan plan;
  plan.system = "synthetic";
  plan.variant = "every \"field\"\n";  // escaped on the way out
  plan.streams = {"compute", "comm", "h2d"};
  Task fwd;
  fwd.id = 0;
  fwd.name = "fwd";
  fwd.stream = 0;
  fwd.flops = 1.2e12;
  fwd.cost_key = "dense_fwd";
  fwd.dtype = "bf16";
  fwd.prev_step_deps = {3, 0};
  fwd.micro_batch = 0;
  fwd.ranks = {{0, 8}, {16, -1}};
  Task a2a;
  a2a.id = 1;
  a2a.name = "emb_a2a";
  a2a.kind = TaskKind::kCollective;
  a2a.stream = 1;
  a2a.bytes = 24;
  a2a.collective =
      Collective{CollectiveOp::kAllToAll, {GroupSpec::Kind::kBlock, 4}, Algorithm::kDirect, 0, 0, 0, {1, 2, 3, 18}};
  a2a.deps = {0};
  Task send;
  send.id = 2;
  send.name = "p2p_send";
  send.kind = TaskKind::kCollective;
  send.stream = 1;
  send.bytes = 4096;
  send.collective = Collective{CollectiveOp::kSend, {GroupSpec::Kind::kStride, 8, 16}, Algorithm::kAuto, 0, -8, 3, {}};
  Task copy;
  copy.id = 3;
  copy.name = "offload";
  copy.kind = TaskKind::kCopy;
  copy.stream = 2;
  copy.flops = 0.1;  // not a round binary number: must come back bit for bit
  copy.bytes = int64_t{1} << 40;
  copy.deps = {1, 2};
  copy.micro_batch = 7;
  copy.batch_offset = 2;
  copy.requests = 1536;
  copy.grad_bytes = (int64_t{1} << 33) + 3;
  copy.launches = 3;
  copy.sync = true;
  Task bcast;
  bcast.id = 4;
  bcast.name = "bcast";
  bcast.kind = TaskKind::kCollective;
  bcast.stream = 1;
  bcast.flops = 5e-324;  // the smallest double
  bcast.collective = Collective{CollectiveOp::kBroadcast, {GroupSpec::Kind::kNode, 0}, Algorithm::kTree, 2, 0, 0, {}};
  plan.tasks = {fwd, a2a, send, copy, bcast};
  return plan;
}

TEST(PlanJsonTest, RoundTripIsExact) {
  const Plan plan = full_plan();
  ASSERT_TRUE(validate_plan(plan, "full").is_ok()) << validate_plan(plan, "full").message();
  const std::string text = plan_to_json(plan);
  const StatusOr<Plan> parsed = plan_from_json(text, "full.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << text;
  EXPECT_EQ(*parsed, plan) << text;
  EXPECT_EQ(plan_to_json(*parsed), text);
}

TEST(PlanJsonTest, WritesOneTaskPerLineAndLeavesDefaultsOut) {
  Plan plan;
  plan.system = "s";
  plan.streams = {"comm"};
  Task ar;
  ar.name = "ar";
  ar.kind = TaskKind::kCollective;
  ar.bytes = 1024;
  ar.collective = Collective{};
  plan.tasks = {ar};
  EXPECT_EQ(plan_to_json(plan), R"({
  "system": "s",
  "variant": "",
  "streams": ["comm"],
  "tasks": [
    {"name": "ar", "kind": "collective", "stream": "comm", "bytes": 1024, "collective": {"op": "allreduce"}}
  ]
}
)");
}

TEST(PlanJsonTest, ReadsTheDocumentedExample) {
  // The example at the top of plan_json.h.
  const StatusOr<Plan> plan = plan_from_json(
      R"({"system": "synthetic", "variant": "overlap", "streams": ["compute", "comm"],
          "tasks": [
            {"name": "fwd", "kind": "compute", "stream": "compute", "flops": 1.2e12, "bytes": 0,
             "cost_key": "dense_fwd", "dtype": "bf16", "deps": [], "prev_step_deps": ["update"],
             "micro_batch": 0, "ranks": [[0, 8], [16, -1]]},
            {"name": "grad_ar", "kind": "collective", "stream": "comm", "bytes": 104857600,
             "collective": {"op": "allreduce", "group": "world", "algorithm": "ring"}, "deps": ["fwd"]},
            {"name": "emb_a2a", "kind": "collective", "stream": "comm", "bytes": 1048576,
             "collective": {"op": "alltoall", "group": {"block": 8}, "split_bytes": [1048576, 0, 0, 0, 0, 0, 0, 0]}},
            {"name": "p2p_send", "kind": "collective", "stream": "comm", "bytes": 4096,
             "collective": {"op": "send", "peer_offset": 1, "tag": 3}},
            {"name": "update", "kind": "host", "stream": "compute", "bytes": 1e8}
          ]})",
      "example.json");
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ASSERT_EQ(plan->tasks.size(), 5u);
  const Task& fwd = plan->tasks[0];
  EXPECT_EQ(fwd.flops, 1.2e12);
  EXPECT_EQ(fwd.prev_step_deps, std::vector<int>{4});  // "update" is named before it is defined
  EXPECT_EQ(fwd.ranks, (std::vector<RankRange>{{0, 8}, {16, -1}}));
  EXPECT_FALSE(fwd.collective.has_value());
  const Task& grad_ar = plan->tasks[1];
  EXPECT_EQ(grad_ar.deps, std::vector<int>{0});
  EXPECT_EQ(grad_ar.stream, 1);
  EXPECT_EQ(grad_ar.micro_batch, -1);  // the default
  EXPECT_EQ(grad_ar.collective->algorithm, Algorithm::kRing);
  const Collective& a2a = *plan->tasks[2].collective;
  EXPECT_EQ(a2a.group, (GroupSpec{GroupSpec::Kind::kBlock, 8}));
  EXPECT_EQ(a2a.algorithm, Algorithm::kAuto);  // the default
  const Collective& send = *plan->tasks[3].collective;
  EXPECT_EQ(send.group.kind, GroupSpec::Kind::kWorld);  // the default
  EXPECT_EQ(send.peer_offset, 1);
  EXPECT_EQ(send.tag, 3);
  EXPECT_EQ(plan->tasks[4].bytes, 100000000);  // 1e8 is an integer, if written as a float
}

TEST(PlanJsonTest, WriteThenReadAFile) {
  const std::string path = ::testing::TempDir() + "ct_plan_json_test.json";
  ASSERT_TRUE(write_plan(path, full_plan()).is_ok());
  const StatusOr<Plan> plan = read_plan(path);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(*plan, full_plan());
  std::filesystem::remove(path);
}

TEST(PlanJsonTest, MissingFileIsNotFound) {
  const std::string path = ::testing::TempDir() + "ct_plan_json_test_no_such_plan.json";
  const StatusOr<Plan> plan = read_plan(path);
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kNotFound);
  EXPECT_NE(plan.status().message().find(path), std::string::npos) << plan.status().message();
}

TEST(PlanJsonTest, ShippedExamplesParseValidateAndAreWrittenAsTheyAreRead) {
  for (const char* file : {"synthetic_overlap.json", "ring_allreduce.json"}) {
    const std::string path = std::string(CT_SOURCE_DIR) + "/sim/examples/plans/" + file;
    const StatusOr<Plan> plan = read_plan(path);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    // 16 ranks on nodes of 8: two nodes, so that node and world differ.
    const Status valid = validate_plan_for_world(*plan, path, 16, 8);
    EXPECT_TRUE(valid.is_ok()) << valid.message();
    // The examples are in the writer's own layout, so that a saved plan and
    // a shipped one look alike.
    EXPECT_EQ(plan_to_json(*plan), *read_file(path)) << file;
  }
}

TEST(PlanJsonTest, SyntheticOverlapIsTheDocumentedStep) {
  const StatusOr<Plan> plan = read_plan(std::string(CT_SOURCE_DIR) + "/sim/examples/plans/synthetic_overlap.json");
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ASSERT_EQ(plan->tasks.size(), 5u);
  const Task& fwd = plan->tasks[0];
  EXPECT_EQ(fwd.name, "fwd");
  EXPECT_EQ(fwd.flops, 1.2e12);
  EXPECT_EQ(fwd.prev_step_deps, std::vector<int>{4});  // the previous step's grad_ar
  EXPECT_EQ(plan->tasks[4].name, "grad_ar");
  EXPECT_EQ(plan->tasks[4].bytes, 100 << 20);  // 100 MiB
  EXPECT_EQ(plan->tasks[1].bytes, 64 << 20);   // 64 MiB
}

TEST(PlanJsonErrorsTest, BadJsonNamesThePosition) {
  const std::string message = error_for("{\"streams\": [\"compute\"],\n \"tasks\": [}");
  // nlohmann's own words in the middle; the file, the line and the byte around them.
  EXPECT_EQ(message.rfind("plan.json: not valid JSON: parse error at line 2, column 12: ", 0), 0u) << message;
  EXPECT_TRUE(message.ends_with(" (byte 37)")) << message;  // 25 bytes of line 1 with its '\n', then column 12
}

TEST(PlanJsonErrorsTest, OneMessagePerClassOfMistake) {
  struct Case {
    const char* what;
    std::string text;
    std::string message;
  };
  const std::string a = R"({"name": "a", "kind": "compute", "stream": "compute")";
  const Case cases[] = {
      {"top level not an object", "[]", "plan.json: top level: expected an object, got an array"},
      {"unknown top-level field", R"({"streams": ["c"], "tasks": [], "stream": "c"})",
       "plan.json: field 'stream': unknown field (allowed: system, variant, streams, tasks)"},
      {"missing tasks", R"({"streams": ["c"]})", "plan.json: field 'tasks': missing (the field is required)"},
      {"no streams", R"({"streams": [], "tasks": []})", "plan.json: the plan has no streams (it needs at least one)"},
      {"duplicate stream", R"({"streams": ["c", "c"], "tasks": []})",
       "plan.json: field 'streams[1]': duplicate stream 'c'"},
      {"unknown field", with_tasks(a + R"(, "flop": 5})"),
       "plan.json: field 'tasks[0].flop': unknown field (allowed: name, kind, stream, flops, bytes, cost_key, dtype, "
       "collective, deps, prev_step_deps, micro_batch, batch_offset, requests, grad_bytes, ranks, launches, sync)"},
      {"field given twice", with_tasks(a + R"(, "flops": 1, "flops": 2})"),
       "plan.json: field 'tasks[0].flops': given twice"},
      {"nested field given twice", with_tasks(a + "}, " + R"({"name": "ar", "kind": "collective", "stream": "comm",
                                  "collective": {"op": "allreduce", "group": "node", "op": "alltoall"}})"),
       "plan.json: field 'tasks[1].collective.op': given twice"},
      {"missing name", with_tasks(R"({"kind": "compute", "stream": "compute"})"),
       "plan.json: field 'tasks[0].name': missing (the field is required)"},
      {"name of the wrong type", with_tasks(R"({"name": 5, "kind": "compute", "stream": "compute"})"),
       "plan.json: field 'tasks[0].name': expected a string, got a number (5)"},
      {"negative flops",
       with_tasks(a + "}, " + R"({"name": "b", "kind": "compute", "stream": "compute", "flops": -5})"),
       "plan.json: field 'tasks[1].flops': -5 must be >= 0"},
      {"flops of the wrong type", with_tasks(a + R"(, "flops": "12"})"),
       "plan.json: field 'tasks[0].flops': expected a number, got a string ('12')"},
      {"flops too large for a double", with_tasks(a + R"(, "flops": 1e400})"),
       "plan.json: not valid JSON: number overflow parsing '1e400'"},
      {"fractional bytes", with_tasks(a + R"(, "bytes": 1.5})"),
       "plan.json: field 'tasks[0].bytes': expected a non-negative integer, got a number (1.5)"},
      {"negative bytes", with_tasks(a + R"(, "bytes": -1})"), "plan.json: field 'tasks[0].bytes': -1 must be >= 0"},
      {"bytes beyond int64", with_tasks(a + R"(, "bytes": 18446744073709551615})"),
       "plan.json: field 'tasks[0].bytes': 18446744073709551615 must be <= 9223372036854775807"},
      {"unknown kind", with_tasks(R"({"name": "a", "kind": "gpu", "stream": "compute"})"),
       "plan.json: field 'tasks[0].kind': unknown kind 'gpu' (allowed: compute, collective, copy, lookup, host)"},
      {"unknown stream", with_tasks(R"({"name": "bwd", "kind": "compute", "stream": "h2d"})"),
       "plan.json: task 'bwd': field 'stream': unknown stream 'h2d' (streams: compute, comm)"},
      {"unknown dep",
       with_tasks(a + "}, " + R"({"name": "b", "kind": "compute", "stream": "compute", "deps": ["zz"]})"),
       "plan.json: task 'b': field 'deps': unknown task 'zz'"},
      {"unknown prev_step_dep", with_tasks(a + R"(, "prev_step_deps": ["a", "upd"]})"),
       "plan.json: task 'a': field 'prev_step_deps': unknown task 'upd'"},
      {"deps not a list", with_tasks(a + R"(, "deps": "b"})"),
       "plan.json: field 'tasks[0].deps': expected an array of strings, got a string ('b')"},
      {"duplicate task name", with_tasks(a + "}, " + a + "}"),
       "plan.json: field 'tasks[1].name': duplicate task name 'a' (also tasks[0])"},
      {"micro_batch below -1", with_tasks(a + R"(, "micro_batch": -2})"),
       "plan.json: field 'tasks[0].micro_batch': -2 must be >= -1"},
      {"negative batch_offset", with_tasks(a + R"(, "batch_offset": -1})"),
       "plan.json: field 'tasks[0].batch_offset': -1 must be >= 0"},
      {"negative requests", with_tasks(a + R"(, "requests": -2})"),
       "plan.json: field 'tasks[0].requests': -2 must be >= 0"},
      {"negative grad_bytes", with_tasks(a + R"(, "grad_bytes": -8})"),
       "plan.json: field 'tasks[0].grad_bytes': -8 must be >= 0"},
      {"negative launches", with_tasks(a + R"(, "launches": -1})"),
       "plan.json: field 'tasks[0].launches': -1 must be >= 0"},
      {"sync not a boolean", with_tasks(a + R"(, "sync": 1})"),
       "plan.json: field 'tasks[0].sync': expected true or false, got a number (1)"},
      {"rank range of one number", with_tasks(a + R"(, "ranks": [[0, 4], [5]]})"),
       "plan.json: field 'tasks[0].ranks[1]': expected a range [begin, end], got an array of 1"},
      {"negative rank", with_tasks(a + R"(, "ranks": [[-1, 4]]})"),
       "plan.json: field 'tasks[0].ranks[0][0]': -1 must be >= 0"},
      {"empty rank range", with_tasks(a + R"(, "ranks": [[4, 2]]})"),
       "plan.json: task 'a': rank range [4, 2) is not [begin, end) with 0 <= begin < end (or end -1)"},
      {"collective without descriptor", with_tasks(R"({"name": "ar", "kind": "collective", "stream": "comm"})"),
       "plan.json: task 'ar': kind collective needs a 'collective' descriptor"},
      {"descriptor on a compute task", with_tasks(a + R"(, "collective": {"op": "allreduce"}})"),
       "plan.json: task 'a': kind compute must not have a 'collective' descriptor"},
      {"unknown op",
       with_tasks(R"({"name": "ar", "kind": "collective", "stream": "comm", "collective": {"op": "allreduc"}})"),
       "plan.json: field 'tasks[0].collective.op': unknown op 'allreduc' (allowed: allreduce, alltoall, allgather, "
       "reducescatter, broadcast, send, recv)"},
      {"unknown algorithm",
       with_tasks(
           R"({"name": "ar", "kind": "collective", "stream": "comm", "collective": {"op": "allreduce", "algorithm": "rings"}})"),
       "plan.json: field 'tasks[0].collective.algorithm': unknown algorithm 'rings' (allowed: auto, ring, tree, "
       "halving_doubling, hierarchical, direct)"},
      {"unknown group name",
       with_tasks(
           R"({"name": "ar", "kind": "collective", "stream": "comm", "collective": {"op": "allreduce", "group": "rack"}})"),
       R"(plan.json: field 'tasks[0].collective.group': unknown group 'rack' (allowed: "world", "node", {"block": G}, {"stride": G[, "span": S]}))"},
      {"zero block",
       with_tasks(
           R"({"name": "ar", "kind": "collective", "stream": "comm", "collective": {"op": "allreduce", "group": {"block": 0}}})"),
       "plan.json: field 'tasks[0].collective.group.block': 0 must be >= 1"},
      {"block and stride", with_tasks(R"({"name": "ar", "kind": "collective", "stream": "comm",
                      "collective": {"op": "allreduce", "group": {"block": 2, "stride": 2}}})"),
       R"(plan.json: field 'tasks[0].collective.group': expected exactly one of 'block' or 'stride' (allowed: "world", "node", {"block": G}, {"stride": G[, "span": S]}))"},
      {"span of a block", with_tasks(R"({"name": "ar", "kind": "collective", "stream": "comm",
                      "collective": {"op": "allreduce", "group": {"block": 2, "span": 4}}})"),
       R"(plan.json: field 'tasks[0].collective.group': 'span' is only for a 'stride' group (allowed: "world", "node", {"block": G}, {"stride": G[, "span": S]}))"},
      {"misspelt group field",
       with_tasks(
           R"({"name": "ar", "kind": "collective", "stream": "comm", "collective": {"op": "allreduce", "group": {"blok": 2}}})"),
       "plan.json: field 'tasks[0].collective.group.blok': unknown field (allowed: block, stride, span)"},
      {"peer_offset of the wrong type",
       with_tasks(
           R"({"name": "s", "kind": "collective", "stream": "comm", "collective": {"op": "send", "peer_offset": "1"}})"),
       "plan.json: field 'tasks[0].collective.peer_offset': expected an integer, got a string ('1')"},
      {"negative split", with_tasks(R"({"name": "a2a", "kind": "collective", "stream": "comm", "bytes": 2,
                      "collective": {"op": "alltoall", "split_bytes": [3, -1]}})"),
       "plan.json: field 'tasks[0].collective.split_bytes[1]': -1 must be >= 0"},
      {"self dep", with_tasks(a + R"(, "deps": ["a"]})"), "plan.json: task 'a': depends on itself"},
      {"dependency cycle", with_tasks(R"({"name": "a", "kind": "compute", "stream": "compute", "deps": ["b"]},
                     {"name": "b", "kind": "host", "stream": "comm", "deps": ["a"]})"),
       "plan.json: dependency cycle: 'a' -> 'b' -> 'a'"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(error_for(c.text), c.message) << c.what;
  }
}

}  // namespace
}  // namespace clustertwin::models
