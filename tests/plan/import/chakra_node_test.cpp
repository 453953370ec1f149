// models/plan/import/chakra_node.h: one node of a rank's Chakra file as a task. Its
// kind from the node type, its stream, how it is priced, our own ct_* fields,
// and each bad node named by the file, node and attribute.

#include "models/plan/import/chakra_node.h"

#include <gtest/gtest.h>

namespace clustertwin::models::chakra_detail {
namespace {

namespace ch = traces::chakra;

ch::Node chakra_node(ch::NodeType type, uint64_t duration_us = 0, std::vector<ch::Attribute> attrs = {}) {
  ch::Node n;
  n.id = 9;
  n.name = "op";
  n.type = static_cast<int>(type);
  n.duration_micros = duration_us;
  n.attrs = std::move(attrs);
  return n;
}

StatusOr<RankTask> convert_one(const ch::Node& node, const ChakraImportOptions& options = {},
                               const std::vector<std::string>& ct_streams = {}) {
  FileCounts counts;
  return convert_node(node, "op.t", 0, 4, ct_streams, options, "r0.et", &counts);
}

TEST(ChakraNodeTest, AComputeNodeIsPricedByItsDurationOrItsFlops) {
  auto by_duration = convert_one(chakra_node(ch::NodeType::kComp, 240, {{"num_ops", int64_t{1000}}}));
  ASSERT_TRUE(by_duration.is_ok()) << by_duration.status().message();
  EXPECT_EQ(by_duration->task.kind, TaskKind::kCompute);
  EXPECT_EQ(by_duration->task.name, "op.t");
  EXPECT_EQ(by_duration->task.flops, 1000);
  EXPECT_EQ(by_duration->stream, "compute");
  EXPECT_EQ(by_duration->duration, 240e-6);  // 240 / 1e6: the double nearest 240e-6
  EXPECT_FALSE(by_duration->by_flops);
  // No duration: by its FLOPs on the roofline; or by FLOPs first when asked.
  auto no_duration = convert_one(chakra_node(ch::NodeType::kComp, 0, {{"num_ops", int64_t{1000}}}));
  ASSERT_TRUE(no_duration.is_ok());
  EXPECT_TRUE(no_duration->by_flops);
  ChakraImportOptions flops_first;
  flops_first.compute_cost = ChakraComputeCost::kFlops;
  auto first = convert_one(chakra_node(ch::NodeType::kComp, 240, {{"num_ops", int64_t{1000}}}), flops_first);
  ASSERT_TRUE(first.is_ok());
  EXPECT_TRUE(first->by_flops);
  EXPECT_FALSE(first->duration.has_value());
}

TEST(ChakraNodeTest, KindsAndStreamsFollowTheNodeTypeAndAttributes) {
  auto host = convert_one(chakra_node(ch::NodeType::kComp, 5, {{"is_cpu_op", true}}));
  ASSERT_TRUE(host.is_ok()) << host.status().message();
  EXPECT_EQ(host->task.kind, TaskKind::kHost);
  EXPECT_EQ(host->stream, "host");
  EXPECT_EQ(host->duration, 5e-6);
  auto lookup = convert_one(
      chakra_node(ch::NodeType::kMemLoad, 0, {{"ct_kind", std::string("lookup")}, {"tensor_size", int64_t{4096}}}));
  ASSERT_TRUE(lookup.is_ok()) << lookup.status().message();
  EXPECT_EQ(lookup->task.kind, TaskKind::kLookup);
  EXPECT_EQ(lookup->task.bytes, 4096);
  auto copy = convert_one(chakra_node(ch::NodeType::kMemStore, 0, {{"stream", int64_t{3}}}));
  ASSERT_TRUE(copy.is_ok()) << copy.status().message();
  EXPECT_EQ(copy->task.kind, TaskKind::kCopy);
  EXPECT_EQ(copy->stream, "stream 3");
  // Our own export's streams, by index.
  auto ours = convert_one(chakra_node(ch::NodeType::kComp, 1, {{"stream", int64_t{1}}}), {}, {"compute", "comm"});
  ASSERT_TRUE(ours.is_ok()) << ours.status().message();
  EXPECT_EQ(ours->stream, "comm");
}

TEST(ChakraNodeTest, OurOwnFieldsComeBackAndACostKeyPricesTheTask) {
  auto t = convert_one(chakra_node(ch::NodeType::kComp, 240,
                                   {{"ct_cost_key", std::string("fwd")},
                                    {"ct_dtype", std::string("fp32")},
                                    {"ct_micro_batch", int64_t{2}},
                                    {"ct_batch_offset", int64_t{1}},
                                    {"ct_requests", int64_t{8}},
                                    {"ct_grad_bytes", int64_t{1024}},
                                    {"ct_launches", int64_t{3}},
                                    {"ct_sync", int64_t{1}}}));
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t->task.cost_key, "fwd");
  EXPECT_FALSE(t->duration.has_value());  // the key prices it
  EXPECT_EQ(t->task.dtype, "fp32");
  EXPECT_EQ(t->task.micro_batch, 2);
  EXPECT_EQ(t->task.batch_offset, 1);
  EXPECT_EQ(t->task.requests, 8);
  EXPECT_EQ(t->task.grad_bytes, 1024);
  EXPECT_EQ(t->task.launches, 3);
  EXPECT_TRUE(t->task.sync);
}

TEST(ChakraNodeTest, EachBadNodeIsOneLineNamingTheFileNodeAndAttribute) {
  const std::string supported =
      "supported: COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE; "
      "METADATA_NODE and INVALID_NODE are skipped";
  ch::Node unknown = chakra_node(ch::NodeType::kComp);
  unknown.type = 42;
  EXPECT_EQ(convert_one(unknown).status().message(),
            "r0.et: node 9 ('op'): type 42 is not a Chakra node type (" + supported + ")");
  EXPECT_EQ(
      convert_one(chakra_node(ch::NodeType::kMemLoad, 0, {{"ct_kind", std::string("gather")}})).status().message(),
      "r0.et: node 9 ('op'): attribute 'ct_kind': 'gather' (allowed: lookup)");
  EXPECT_EQ(convert_one(chakra_node(ch::NodeType::kComp, 0, {{"ct_sync", int64_t{2}}})).status().message(),
            "r0.et: node 9 ('op'): attribute 'ct_sync': 2 is out of range [0, 1]");
  EXPECT_EQ(convert_one(chakra_node(ch::NodeType::kComp, 0, {{"stream", int64_t{5}}}), {}, {"compute", "comm"})
                .status()
                .message(),
            "r0.et: node 9 ('op'): attribute 'stream': 5, but the metadata's ct_streams name 2");
  EXPECT_EQ(convert_one(chakra_node(ch::NodeType::kComp, 0), {}, {"compute"}).status().message(),
            "r0.et: node 9 ('op'): attribute 'stream': missing, but the metadata's ct_streams name 1");
}

TEST(ChakraNodeTest, MetadataAndInvalidNodesAreSkipped) {
  EXPECT_TRUE(skipped_type(static_cast<int>(ch::NodeType::kMetadata)));
  EXPECT_TRUE(skipped_type(static_cast<int>(ch::NodeType::kInvalid)));
  EXPECT_FALSE(skipped_type(static_cast<int>(ch::NodeType::kComp)));
  EXPECT_FALSE(skipped_type(static_cast<int>(ch::NodeType::kStorage)));  // unsupported, not skipped
}

}  // namespace
}  // namespace clustertwin::models::chakra_detail
