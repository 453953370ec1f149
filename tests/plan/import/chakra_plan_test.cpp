// A plan to Chakra execution traces and back (models/plan/import/chakra_plan.h):
// export then import gives the same plan; files written elsewhere (Chakra's
// converters' shapes, tests/data/chakra) import; bad files get one line.

#include "models/plan/import/chakra_plan.h"

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "models/plan/plan_json.h"

namespace clustertwin::models {
namespace {

namespace ch = traces::chakra;

const std::string kData = std::string(CT_TEST_DATA_DIR) + "/chakra/";
const std::string kPlans = std::string(CT_SOURCE_DIR) + "/sim/examples/plans/";

// A stand-in for the twin's cost: 1 TFLOP/s, so flops 1.2e12 is 1.2 s; the network times transfers.
StatusOr<std::optional<double>> toy_seconds(const Task& t, int) {
  if (t.kind == TaskKind::kCollective || t.kind == TaskKind::kCopy) return std::optional<double>();
  return std::optional<double>(t.flops / 1e12);
}

// Export, then each file through its bytes, then import.
StatusOr<ChakraImport> round_trip(const Plan& plan, int world, ChakraExport* exported = nullptr) {
  ChakraExportOptions o;
  o.world_size = world;
  o.devices_per_node = 2;
  o.platform = "toy";
  auto e = plan_to_chakra(plan, "plan.json", o, toy_seconds);
  if (!e.is_ok()) return e.status();
  std::vector<ChakraInput> inputs;
  for (int r = 0; r < world; ++r) {
    auto file = ch::parse_et(ch::serialize_et(e->ranks[r]), "p." + std::to_string(r) + ".et");
    if (!file.is_ok()) return file.status();
    inputs.push_back({"p." + std::to_string(r) + ".et", *file});
  }
  if (exported) *exported = *e;
  return plan_from_chakra(inputs, {});
}

class ShippedPlanTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedPlanTest, ExportThenImportGivesThePlanBack) {
  auto plan = read_plan(kPlans + GetParam());
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  for (int world : {1, 8}) {
    auto back = round_trip(*plan, world);
    ASSERT_TRUE(back.is_ok()) << back.status().message();
    EXPECT_EQ(back->plan, *plan) << plan_to_json(back->plan);
    EXPECT_EQ(back->world_size, world);
    EXPECT_TRUE(back->durations.empty());  // priced as exported (ct_cost_key), not by duration
    EXPECT_EQ(back->exported_on, "toy");
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, ShippedPlanTest,
                         ::testing::Values("synthetic_overlap.json", "small_overlap.json", "ring_allreduce.json"));

// Ranks that differ (a pipeline's send and recv), groups, every task kind and optional field.
constexpr const char* kMixedPlan =
    R"({"system": "test", "variant": "mixed", "streams": ["compute", "comm", "h2d", "host"],
 "tasks": [
  {"name": "load", "kind": "copy", "stream": "h2d", "bytes": 4096, "batch_offset": 2},
  {"name": "emb", "kind": "lookup", "stream": "h2d", "bytes": 8192, "cost_key": "emb", "requests": 4, "deps": ["load"]},
  {"name": "fwd", "kind": "compute", "stream": "compute", "flops": 2e12, "bytes": 1000, "dtype": "fp32", "micro_batch": 0,
   "deps": ["emb"], "prev_step_deps": ["ar"]},
  {"name": "send", "kind": "collective", "stream": "comm", "bytes": 1024, "collective": {"op": "send", "peer_offset": 1, "tag": 7},
   "deps": ["fwd"], "ranks": [[0, 1], [2, 3]]},
  {"name": "recv", "kind": "collective", "stream": "comm", "bytes": 1024, "collective": {"op": "recv", "peer_offset": 3, "tag": 7},
   "ranks": [[1, 2], [3, 4]]},
  {"name": "bwd", "kind": "compute", "stream": "compute", "flops": 4e12, "deps": ["fwd", "recv"], "grad_bytes": 64},
  {"name": "ar", "kind": "collective", "stream": "comm", "bytes": 1048576, "deps": ["bwd"],
   "collective": {"op": "allreduce", "group": {"block": 2}, "algorithm": "ring"}},
  {"name": "a2a", "kind": "collective", "stream": "comm", "bytes": 300, "deps": ["bwd"],
   "collective": {"op": "alltoall", "group": {"stride": 2}, "split_bytes": [100, 200]}},
  {"name": "bc", "kind": "collective", "stream": "comm", "bytes": 64, "collective": {"op": "broadcast", "group": "node", "root": 1}},
  {"name": "step", "kind": "host", "stream": "host", "cost_key": "optimizer", "deps": ["ar"]}
 ]})";

TEST(ChakraPlanTest, ARankSpecificPlanWithEveryFieldComesBack) {
  auto plan = plan_from_json(kMixedPlan, "mixed.json");
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ChakraExport e;
  auto back = round_trip(*plan, 4, &e);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->plan, *plan) << plan_to_json(back->plan);

  // What other readers see: rank 0 has no recv; its send goes to rank 1 with tag 7.
  const ch::EtFile& r0 = e.ranks[0];
  ASSERT_EQ(r0.nodes.size(), 9u);
  const ch::Node& send = r0.nodes[3];
  EXPECT_EQ(send.type, static_cast<int>(ch::NodeType::kCommSend));
  EXPECT_EQ(*ch::attr_int(*send.attr("comm_src"), ""), 0);
  EXPECT_EQ(*ch::attr_int(*send.attr("comm_dst"), ""), 1);
  EXPECT_EQ(*ch::attr_int(*send.attr("comm_tag"), ""), 7);
  const ch::Node& fwd = r0.nodes[2];
  EXPECT_EQ(fwd.duration_micros, 2000000u);  // 2e12 FLOPs at the toy 1e12 FLOP/s
  EXPECT_EQ(*ch::attr_int(*fwd.attr("num_ops"), ""), 2000000000000);
  // The block(2) all-reduce of ranks 0-1 and of 2-3: process groups 1 and 2 (ASTRA-sim's comm-group file).
  EXPECT_EQ(*ch::attr_string(*r0.nodes[5].attr("pg_name"), ""), "1");
  EXPECT_EQ(comm_groups_json(e.comm_groups),
            "{\n  \"1\": [0, 1],\n  \"2\": [0, 2],\n  \"3\": [1, 3],\n  \"4\": [2, 3]\n}\n");
}

std::vector<ChakraInput> read_inputs(const std::vector<std::string>& names) {
  std::vector<ChakraInput> inputs;
  for (const std::string& n : names) {
    auto f = ch::read_et(kData + n);
    EXPECT_TRUE(f.is_ok()) << f.status().message();
    if (f.is_ok()) inputs.push_back({kData + n, *f});
  }
  return inputs;
}

// The text converter's DATA parallelism (tests/data/chakra/README.md): node ids 0-6 on NPU 0 and 7-13 on NPU 1,
// the same nodes by name, so one task each for both ranks.
TEST(ChakraPlanTest, ImportsTheTextConvertersDataParallelFiles) {
  auto imported = plan_from_chakra(read_inputs({"text_dp.0.et", "text_dp.1.et"}), {});
  ASSERT_TRUE(imported.is_ok()) << imported.status().message();
  const Plan& p = imported->plan;
  EXPECT_EQ(p.system, "chakra");
  EXPECT_EQ(p.variant, "text_dp");
  EXPECT_EQ(p.streams, (std::vector<std::string>{"compute", "comm"}));
  ASSERT_EQ(p.tasks.size(), 7u);
  EXPECT_EQ(imported->nodes, 14);
  EXPECT_EQ(imported->by_duration, 5);
  EXPECT_EQ(imported->durations.at("COMP_NODE_layer1_BWD_WG"), 240e-6);
  const Task& ar1 = p.tasks[3];
  EXPECT_EQ(ar1.name, "COMM_COLL_NODE_layer1_ALLREDUCE");
  EXPECT_TRUE(ar1.ranks.empty());  // both ranks
  ASSERT_TRUE(ar1.collective.has_value());
  EXPECT_EQ(ar1.collective->op, CollectiveOp::kAllReduce);
  EXPECT_EQ(ar1.collective->group.kind, GroupSpec::Kind::kWorld);
  EXPECT_EQ(ar1.bytes, 2097152);
  EXPECT_EQ(ar1.deps, std::vector<int>{2});  // COMP_NODE_layer1_BWD_WG
  EXPECT_EQ(p.tasks[2].cost_key, "COMP_NODE_layer1_BWD_WG");
}

TEST(ChakraPlanTest, ImportsThePyTorchConvertersShape) {
  auto imported = plan_from_chakra(read_inputs({"pytorch_style.0.et", "pytorch_style.1.et"}), {});
  ASSERT_TRUE(imported.is_ok()) << imported.status().message();
  const Plan& p = imported->plan;
  EXPECT_EQ(imported->skipped, 2);               // the METADATA_NODE of each rank
  EXPECT_EQ(imported->ctrl_deps_ignored, 6);     // 3 kernels per rank name their caller
  EXPECT_EQ(imported->groups_from_metadata, 1);  // pg "0": ranks [0, 1], from the METADATA_NODE
  EXPECT_EQ(imported->world_groups, 0);
  EXPECT_EQ(p.streams, (std::vector<std::string>{"host", "stream 7", "stream 20"}));
  std::vector<std::string> names;
  for (const Task& t : p.tasks)
    names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"aten::linear", "ampere_sgemm_128x64_tn#1", "record_param_comms",
                                             "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, "
                                             "ncclWork*)",
                                             "aten::mm", "ampere_sgemm_128x64_tn#2"}));
  EXPECT_EQ(p.tasks[0].kind, TaskKind::kHost);
  EXPECT_EQ(p.tasks[1].kind, TaskKind::kCompute);
  EXPECT_EQ(p.tasks[5].deps, (std::vector<int>{3, 4}));  // the all-reduce and aten::mm
  EXPECT_TRUE(p.tasks[0].deps.empty());                  // its METADATA_NODE dependency passes through to none

  // Without the process groups in the METADATA_NODE, pg "0" is a name only: the world, counted.
  // --comm-groups says what it is.
  auto inputs = read_inputs({"pytorch_style.0.et", "pytorch_style.1.et"});
  for (ChakraInput& in : inputs)
    in.file.nodes[0].inputs = {};
  auto unknown = plan_from_chakra(inputs, {});
  ASSERT_TRUE(unknown.is_ok()) << unknown.status().message();
  EXPECT_EQ(unknown->world_groups, 2);
  ChakraImportOptions o;
  o.comm_groups = {{"0", {0, 1}}};
  auto grouped = plan_from_chakra(inputs, o);
  ASSERT_TRUE(grouped.is_ok()) << grouped.status().message();
  EXPECT_EQ(grouped->world_groups, 0);
  EXPECT_EQ(grouped->plan, unknown->plan);  // {0, 1} is the world of 2
}

// One rank's file from nodes, for the cases below.
ch::Node node(uint64_t id, const std::string& name, ch::NodeType type, std::vector<uint64_t> deps = {},
              std::vector<ch::Attribute> attrs = {}) {
  ch::Node n;
  n.id = id;
  n.name = name;
  n.type = static_cast<int>(type);
  n.data_deps = std::move(deps);
  n.attrs = std::move(attrs);
  n.duration_micros = 10;
  return n;
}

std::vector<ChakraInput> files(const std::vector<std::vector<ch::Node>>& ranks) {
  std::vector<ChakraInput> out;
  for (size_t r = 0; r < ranks.size(); ++r)
    out.push_back({"t." + std::to_string(r) + ".et", ch::EtFile{{}, ranks[r]}});
  return out;
}

// A pipeline's hand-off as another writer puts it: comm_src, comm_dst and comm_tag, no ct_* attribute.
TEST(ChakraPlanTest, SendAndRecvBecomePeerOffsetsAndTags) {
  const std::vector<ch::Attribute> send = {
      {"comm_src", int64_t{0}}, {"comm_dst", int64_t{1}}, {"comm_tag", int64_t{5}}, {"comm_size", int64_t{4096}}};
  const std::vector<ch::Attribute> recv = {
      {"comm_src", int64_t{0}}, {"comm_dst", int64_t{1}}, {"comm_tag", int64_t{5}}, {"comm_size", int64_t{4096}}};
  auto imported = plan_from_chakra(
      files({{node(0, "fwd0", ch::NodeType::kComp), node(1, "act", ch::NodeType::kCommSend, {0}, send)},
             {node(0, "act", ch::NodeType::kCommRecv, {}, recv), node(1, "fwd1", ch::NodeType::kComp, {0})}}),
      {});
  ASSERT_TRUE(imported.is_ok()) << imported.status().message();
  const Plan& p = imported->plan;
  ASSERT_EQ(p.tasks.size(), 4u);
  // Same name on both ranks, but a send and a recv: two tasks, the one met second named for its rank. Plan
  // order: the earliest position on any rank first (the recv opens rank 1's file), then the order met.
  const Task& recv_task = p.tasks[1];
  EXPECT_EQ(recv_task.name, "act@r1");
  EXPECT_EQ(recv_task.collective->op, CollectiveOp::kRecv);
  EXPECT_EQ(recv_task.collective->peer_offset, 1);  // rank 1's peer 0 is 1 + 1 mod 2
  EXPECT_EQ(recv_task.collective->tag, 5);
  EXPECT_EQ(recv_task.ranks, (std::vector<RankRange>{{1, 2}}));
  const Task& send_task = p.tasks[2];
  EXPECT_EQ(send_task.name, "act");
  EXPECT_EQ(send_task.collective->op, CollectiveOp::kSend);
  EXPECT_EQ(send_task.collective->peer_offset, 1);  // rank 0 -> 1
  EXPECT_EQ(send_task.ranks, (std::vector<RankRange>{{0, 1}}));
  EXPECT_EQ(p.streams, (std::vector<std::string>{"compute", "comm"}));
  EXPECT_EQ(p.tasks[3].name, "fwd1");
  EXPECT_EQ(p.tasks[3].deps, std::vector<int>{1});  // fwd1 waits for the activation
}

TEST(ChakraPlanTest, CommGroupsBecomeBlocksAndStrides) {
  const auto coll = [](const std::string& pg) {
    return node(0, "ar", ch::NodeType::kCommColl, {},
                {{"comm_type", int64_t{0}}, {"comm_size", int64_t{64}}, {"pg_name", pg}});
  };
  ChakraImportOptions o;
  o.comm_groups = {{"a", {0, 1}}, {"b", {2, 3}}, {"c", {0, 2}}, {"d", {1, 3}}, {"e", {1, 2}}};
  auto blocks = plan_from_chakra(files({{coll("a")}, {coll("a")}, {coll("b")}, {coll("b")}}), o);
  ASSERT_TRUE(blocks.is_ok()) << blocks.status().message();
  EXPECT_EQ(blocks->plan.tasks.size(), 1u);
  EXPECT_EQ(blocks->plan.tasks[0].collective->group, (GroupSpec{GroupSpec::Kind::kBlock, 2}));
  auto strides = plan_from_chakra(files({{coll("c")}, {coll("d")}, {coll("c")}, {coll("d")}}), o);
  ASSERT_TRUE(strides.is_ok()) << strides.status().message();
  EXPECT_EQ(strides->plan.tasks[0].collective->group, (GroupSpec{GroupSpec::Kind::kStride, 2}));
  // In a world of 8, {0, 2}, {1, 3}, {4, 6}, {5, 7}: every second rank inside blocks of 4 (one stage's DP groups).
  o.comm_groups = {{"a", {0, 1}}, {"b", {2, 3}}, {"c", {0, 2}}, {"d", {1, 3}},
                   {"e", {1, 2}}, {"f", {4, 6}}, {"g", {5, 7}}};
  auto spans = plan_from_chakra(
      files({{coll("c")}, {coll("d")}, {coll("c")}, {coll("d")}, {coll("f")}, {coll("g")}, {coll("f")}, {coll("g")}}),
      o);
  ASSERT_TRUE(spans.is_ok()) << spans.status().message();
  EXPECT_EQ(spans->plan.tasks[0].collective->group, (GroupSpec{GroupSpec::Kind::kStride, 2, 4}));
  auto odd = plan_from_chakra(files({{coll("a")}, {coll("e")}, {coll("e")}, {coll("b")}}), o);
  ASSERT_FALSE(odd.is_ok());
  EXPECT_EQ(odd.status().message(),
            "t.1.et: node 0 ('ar'): pg_name 'e': members [1, 2] are neither the world, an aligned block, a stride "
            "of it nor a stride within aligned blocks (the groups a plan can hold)");
}

TEST(ChakraPlanTest, AStrideWithinASpanComesBack) {
  auto plan = plan_from_json(R"({"system": "test", "variant": "span", "streams": ["comm"], "tasks": [
  {"name": "dp", "kind": "collective", "stream": "comm", "bytes": 4096,
   "collective": {"op": "allreduce", "group": {"stride": 2, "span": 4}}}]})",
                             "span.json");
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ChakraExport e;
  auto back = round_trip(*plan, 8, &e);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->plan, *plan) << plan_to_json(back->plan);
}

TEST(ChakraPlanTest, CtrlDepsAreFollowedOnlyWhenAsked) {
  ch::Node b = node(1, "b", ch::NodeType::kComp);
  b.ctrl_deps = {0};
  const auto in = files({{node(0, "a", ch::NodeType::kComp), b}});
  auto plain = plan_from_chakra(in, {});
  ASSERT_TRUE(plain.is_ok());
  EXPECT_TRUE(plain->plan.tasks[1].deps.empty());
  EXPECT_EQ(plain->ctrl_deps_ignored, 1);
  ChakraImportOptions o;
  o.ctrl_deps = true;
  auto followed = plan_from_chakra(in, o);
  ASSERT_TRUE(followed.is_ok());
  EXPECT_EQ(followed->plan.tasks[1].deps, std::vector<int>{0});
}

TEST(ChakraPlanTest, ComputeCostChoosesDurationOrFlops) {
  const auto in = files({{node(0, "mm", ch::NodeType::kComp, {}, {{"num_ops", int64_t{1000}}})}});
  auto by_duration = plan_from_chakra(in, {});
  ASSERT_TRUE(by_duration.is_ok());
  EXPECT_EQ(by_duration->plan.tasks[0].cost_key, "mm");
  EXPECT_EQ(by_duration->durations.at("mm"), 10e-6);
  ChakraImportOptions o;
  o.compute_cost = ChakraComputeCost::kFlops;
  auto by_flops = plan_from_chakra(in, o);
  ASSERT_TRUE(by_flops.is_ok());
  EXPECT_EQ(by_flops->plan.tasks[0].cost_key, "");
  EXPECT_EQ(by_flops->plan.tasks[0].flops, 1000);
  EXPECT_EQ(by_flops->by_flops, 1);
}

struct BadCase {
  const char* label;
  std::vector<std::vector<ch::Node>> ranks;
  const char* message;
};

class ChakraBadImportTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ChakraBadImportTest, OneLineNamingFileNodeAndField) {
  auto imported = plan_from_chakra(files(GetParam().ranks), {});
  ASSERT_FALSE(imported.is_ok());
  EXPECT_EQ(imported.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ChakraBadImportTest,
    ::testing::Values(
        BadCase{"Checkpoint",
                {{node(4, "ckpt", ch::NodeType::kCheckpoint)}},
                "t.0.et: node 4 ('ckpt'): type CHECKPOINT_NODE is not supported (supported: COMP_NODE, "
                "COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE; METADATA_NODE and "
                "INVALID_NODE are skipped)"},
        BadCase{"UnknownType",
                {{node(4, "x", static_cast<ch::NodeType>(42))}},
                "t.0.et: node 4 ('x'): type 42 is not a Chakra node type (supported: COMP_NODE, COMM_COLL_NODE, "
                "COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE; METADATA_NODE and INVALID_NODE are "
                "skipped)"},
        BadCase{"Barrier",
                {{node(2, "b", ch::NodeType::kCommColl, {}, {{"comm_type", int64_t{9}}, {"comm_size", int64_t{0}}})}},
                "t.0.et: node 2 ('b'): comm_type BARRIER is not supported (supported: ALL_REDUCE, ALL_GATHER, "
                "REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)"},
        BadCase{"NoCommSize",
                {{node(2, "ar", ch::NodeType::kCommColl, {}, {{"comm_type", int64_t{0}}})}},
                "t.0.et: node 2 ('ar'): a COMM_COLL_NODE needs the attribute 'comm_size'"},
        BadCase{"NegativeSize",
                {{node(2, "ar", ch::NodeType::kCommColl, {}, {{"comm_type", int64_t{0}}, {"comm_size", int64_t{-1}}})}},
                "t.0.et: node 2 ('ar'): attribute 'comm_size': -1 is out of range [0, 9223372036854775807]"},
        BadCase{"MissingDep",
                {{node(0, "a", ch::NodeType::kComp, {5})}},
                "t.0.et: node 0 ('a'): data_deps names node 5, which is not in the file"},
        BadCase{"DuplicateId",
                {{node(3, "a", ch::NodeType::kComp), node(3, "b", ch::NodeType::kComp)}},
                "t.0.et: node id 3 is used by node messages 1 and 2"},
        BadCase{"Cycle",
                {{node(0, "a", ch::NodeType::kComp, {1}), node(1, "b", ch::NodeType::kComp, {0})}},
                "t.0.et: node 0 ('a'): on a dependency cycle"},
        BadCase{"PeerOutsideWorld",
                {{node(1, "s", ch::NodeType::kCommSend, {}, {{"comm_dst", int64_t{1}}, {"comm_size", int64_t{8}}})}},
                "t.0.et: node 1 ('s'): comm_dst 1 is outside the world of 1 rank(s) (give one file per rank)"},
        BadCase{"WrongSelf",
                {{node(1, "s", ch::NodeType::kCommSend, {},
                       {{"comm_src", int64_t{1}}, {"comm_dst", int64_t{0}}, {"comm_size", int64_t{8}}})},
                 {}},
                "t.0.et: node 1 ('s'): comm_src 1, but this is the file of rank 0"},
        BadCase{
            "CollectiveOnOneRank",
            {{node(0, "ar", ch::NodeType::kCommColl, {}, {{"comm_type", int64_t{0}}, {"comm_size", int64_t{8}}})}, {}},
            "t.0.et (and the other ranks' files): task 'ar': collective joined by only part of its group: rank "
            "1 is in the world group of rank 0 but does not run the task"},
        BadCase{
            "UnmatchedSend",
            {{node(0, "s", ch::NodeType::kCommSend, {}, {{"comm_dst", int64_t{1}}, {"comm_size", int64_t{8}}})}, {}},
            "t.0.et (and the other ranks' files): send 's' from rank 0 to rank 1 (tag 0) has no matching recv"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.label; });

TEST(ChakraPlanTest, AWorldSizeThatDisagreesWithTheFileCountIsRefused) {
  auto in = files({{node(0, "a", ch::NodeType::kComp)}});
  in[0].file.metadata.attrs = {{"ct_world_size", int64_t{8}}};
  auto imported = plan_from_chakra(in, {});
  ASSERT_FALSE(imported.is_ok());
  EXPECT_EQ(imported.status().message(),
            "t.0.et: GlobalMetadata: ct_world_size 8, but 1 file(s) were given (one per rank: give them all)");
}

TEST(ChakraPlanTest, OneRanksExportedFileGivenTwiceIsRefused) {
  auto in = files({{node(0, "a", ch::NodeType::kComp)}, {node(0, "a", ch::NodeType::kComp)}});
  for (ChakraInput& i : in)
    i.file.metadata.attrs = {{"ct_rank", int64_t{0}}};
  auto imported = plan_from_chakra(in, {});
  ASSERT_FALSE(imported.is_ok());
  EXPECT_EQ(imported.status().message(),
            "t.1.et: GlobalMetadata: ct_rank 0 is also the rank of t.0.et (give each rank's file once)");
}

TEST(ChakraPlanTest, CommGroupsFileIsReadAndChecked) {
  auto groups = parse_comm_groups(R"({"1": [3, 2], "2": [0]})", "g.json");
  ASSERT_TRUE(groups.is_ok());
  EXPECT_EQ(groups->at("1"), (std::vector<int>{2, 3}));
  EXPECT_EQ(parse_comm_groups("[1]", "g.json").status().message(),
            "g.json: not a communicator-group file (a JSON object: {\"1\": [0, 1], ...})");
  EXPECT_EQ(parse_comm_groups(R"({"1": [0, -1]})", "g.json").status().message(),
            "g.json: group '1': rank -1 is not a rank (a non-negative integer)");
}

}  // namespace
}  // namespace clustertwin::models
