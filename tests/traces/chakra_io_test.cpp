// Reading and writing Chakra .et files (traces/chakra/chakra_trace.h): the
// framing, typed attributes, files encoded by protoc (tests/data/chakra), and
// truncated or garbage bytes, which give one line and never a crash.

#include <gtest/gtest.h>

#include <random>

#include "common/file_io.h"
#include "traces/chakra/chakra_trace.h"

namespace clustertwin::traces::chakra {
namespace {

const std::string kData = std::string(CT_TEST_DATA_DIR) + "/chakra/";

EtFile sample() {
  EtFile f;
  f.metadata.version = "0.0.4";
  f.metadata.attrs = {{"schema", std::string("test")}, {"ct_streams", std::vector<std::string>{"compute", "comm"}}};
  Node a;
  a.id = 0;
  a.name = "fwd";
  a.type = static_cast<int>(NodeType::kComp);
  a.duration_micros = 1200;
  a.attrs = {{"num_ops", int64_t{1200000000000}}, {"is_cpu_op", false}, {"x", -2.5}, {"u", uint64_t{1} << 63}};
  Node b;
  b.id = 1;
  b.name = "ar";
  b.type = static_cast<int>(NodeType::kCommColl);
  b.data_deps = {0};
  b.ctrl_deps = {0};
  b.attrs = {{"comm_type", int64_t{0}},
             {"comm_size", int64_t{1} << 20},
             {"split", std::vector<int64_t>{1, -2}},
             {"us", std::vector<uint64_t>{3}},
             {"flags", std::vector<bool>{true, false}},
             {"d", std::vector<double>{0.5}}};
  f.nodes = {a, b};
  return f;
}

TEST(ChakraIoTest, SerializeThenParseGivesTheFileBack) {
  const EtFile f = sample();
  auto back = parse_et(serialize_et(f), "x.et");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(*back, f);
}

TEST(ChakraIoTest, WriteIsAtomicAndReadable) {
  const std::string path = ::testing::TempDir() + "ct_chakra_io.et";
  ASSERT_TRUE(write_et(path, sample()).is_ok());
  auto back = read_et(path);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(*back, sample());
}

// text_dp.0.et was encoded by protoc from text_dp.0.textproto (tests/data/chakra/README.md).
TEST(ChakraIoTest, ReadsAFileEncodedByProtoc) {
  auto f = read_et(kData + "text_dp.0.et");
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  ASSERT_EQ(f->metadata.attrs.size(), 2u);
  EXPECT_EQ(std::get<std::string>(f->metadata.attrs[0].value), "1.0.2-chakra.1.0.0");
  ASSERT_EQ(f->nodes.size(), 7u);
  EXPECT_EQ(f->nodes[3].name, "COMM_COLL_NODE_layer1_ALLREDUCE");
  EXPECT_EQ(f->nodes[3].type, static_cast<int>(NodeType::kCommColl));
  EXPECT_EQ(f->nodes[3].data_deps, std::vector<uint64_t>{2});
  // comm_type ALL_REDUCE is 0: present all the same (a oneof member has presence).
  ASSERT_NE(f->nodes[3].attr("comm_type"), nullptr);
  EXPECT_EQ(*attr_int(*f->nodes[3].attr("comm_type"), "n"), 0);
  EXPECT_EQ(*attr_int(*f->nodes[3].attr("comm_size"), "n"), 2097152);
  EXPECT_EQ(f->nodes[0].duration_micros, 100u);
  // And writing it again gives protoc's bytes: the same wire format.
  EXPECT_EQ(serialize_et(*f), *read_file(kData + "text_dp.0.et"));
}

struct BadBytes {
  const char* label;
  std::string bytes;
  const char* message;
};

class ChakraBadBytesTest : public ::testing::TestWithParam<BadBytes> {};

TEST_P(ChakraBadBytesTest, OneLineNamingTheMessageAndByte) {
  auto f = parse_et(GetParam().bytes, "x.et");
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().message(), std::string("x.et: ") + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ChakraBadBytesTest,
    ::testing::Values(
        BadBytes{"Empty", "", "empty file (a Chakra execution trace starts with its GlobalMetadata)"},
        BadBytes{"LengthCut", "\x80",
                 "truncated: the length prefix of the GlobalMetadata at byte 0 runs past the end of the file (1 "
                 "bytes)"},
        BadBytes{"MessageCut",
                 "\x05"
                 "ab",
                 "truncated: the GlobalMetadata at byte 0 declares 5 bytes, but 2 remain"},
        BadBytes{"LongPrefix", std::string(6, '\xff'),
                 "the length prefix of the GlobalMetadata at byte 0 is longer than 5 bytes: not a Chakra execution "
                 "trace"},
        BadBytes{"HugeLength", "\xff\xff\xff\xff\x0f",
                 "the length prefix of the GlobalMetadata at byte 0 says 4294967295 bytes (over 2 GiB): not a Chakra "
                 "execution trace"},
        // Field 31 with wire type 7, which protobuf does not have.
        BadBytes{"NotProtobuf", "\x01\xff",
                 "the GlobalMetadata at byte 0 (1 bytes) does not parse as a Chakra GlobalMetadata: not a Chakra "
                 "execution trace"},
        // An empty GlobalMetadata, then a node whose prefix promises 3 bytes of 1.
        BadBytes{"NodeCut", std::string("\x00\x03\x08", 3),
                 "truncated: node message 1 at byte 1 declares 3 bytes, but 1 remain"}),
    [](const ::testing::TestParamInfo<BadBytes>& info) { return info.param.label; });

// Every prefix of a valid file either is a valid file itself (cut between
// messages) or is reported as truncated; none crashes.
TEST(ChakraIoTest, EveryTruncationIsReportedOrAWholeMessagePrefix) {
  const std::string bytes = *read_file(kData + "pytorch_style.0.et");
  int whole = 0;
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    auto f = parse_et(std::string_view(bytes).substr(0, cut), "cut.et");
    if (f.is_ok()) {
      ++whole;
      EXPECT_EQ(serialize_et(*f), bytes.substr(0, cut)) << "cut at " << cut;
    } else {
      EXPECT_EQ(f.status().message().rfind("cut.et: truncated: ", 0), 0u) << f.status().message();
      EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
    }
  }
  // 8 messages: the prefixes ending after each of the first 7 parse.
  EXPECT_EQ(whole, 7);
}

TEST(ChakraIoTest, RandomBytesNeverCrash) {
  std::mt19937 rng(42);
  int errors = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 200, '\0');
    for (char& c : bytes)
      c = static_cast<char>(rng() & 0xff);
    auto f = parse_et(bytes, "junk.et");
    if (!f.is_ok()) {
      ++errors;
      EXPECT_EQ(f.status().message().rfind("junk.et: ", 0), 0u);
      EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(errors, 1500);  // random bytes are seldom a valid stream of messages
}

TEST(ChakraIoTest, AttributeAccessorsNameTheAttributeAndValue) {
  const Attribute text{"comm_size", std::string("big")};
  EXPECT_EQ(attr_int(text, "f.et: node 3").status().message(),
            "f.et: node 3: attribute 'comm_size': expected an integer, got 'big'");
  const Attribute huge{"num_ops", uint64_t{1} << 63};
  EXPECT_EQ(attr_int(huge, "n").status().message(),
            "n: attribute 'num_ops': 9223372036854775808 is too large (at most 9223372036854775807)");
  EXPECT_EQ(*attr_bool(Attribute{"is_cpu_op", int64_t{1}}, "n"), true);
  EXPECT_EQ(*attr_string(Attribute{"pg_name", int64_t{3}}, "n"), "3");
  EXPECT_EQ(node_type_name(7), "COMM_COLL_NODE");
  EXPECT_EQ(node_type_name(42), "type 42");
  EXPECT_EQ(collective_type_name(1), "REDUCE");
}

}  // namespace
}  // namespace clustertwin::traces::chakra
