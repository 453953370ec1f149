// common/state_dump.h: the dump's byte layout, its round trip, and each way a
// file can be wrong named in one line with the file's name.

#include "common/state_dump.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/file_io.h"

namespace clustertwin {
namespace {

std::string raw_of(const void* data, size_t n) {
  return std::string(static_cast<const char*>(data), n);
}

StateDump two_tensors() {
  StateDump dump;
  dump.rank = 1;
  dump.world = 4;
  const float f[3] = {1.5f, -2.0f, 0.25f};
  const int64_t i[2] = {7, -9};
  dump.tensors.push_back({"w", DumpTensor::Type::kFloat32, {3}, raw_of(f, sizeof f)});
  dump.tensors.push_back({"step", DumpTensor::Type::kInt64, {1, 2}, raw_of(i, sizeof i)});
  return dump;
}

TEST(StateDumpTest, TheLayoutIsTheHeaderThenEachTensor) {
  const std::string bytes = encode_state_dump(two_tensors());
  // 8 magic + 4 x u32 header = 24; "w": 4 + 1 name + 1 dtype + 4 rank + 8 dim + 8 count + 12 bytes = 38;
  // "step": 4 + 4 + 1 + 4 + 2 x 8 + 8 + 16 = 53.
  ASSERT_EQ(bytes.size(), 24u + 38u + 53u);
  EXPECT_EQ(bytes.substr(0, 8), "CTNPDUMP");
  uint32_t header[4];
  std::memcpy(header, bytes.data() + 8, sizeof header);
  EXPECT_EQ(header[0], 1u);  // format version
  EXPECT_EQ(header[1], 1u);  // rank
  EXPECT_EQ(header[2], 4u);  // world
  EXPECT_EQ(header[3], 2u);  // tensors
}

TEST(StateDumpTest, DecodeGivesBackWhatWasEncoded) {
  auto back = decode_state_dump(encode_state_dump(two_tensors()), "d");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->world, 4);
  ASSERT_EQ(back->tensors.size(), 2u);
  EXPECT_EQ(back->tensors[0].name, "w");
  EXPECT_EQ(back->tensors[0].values(), (std::vector<double>{1.5, -2.0, 0.25}));
  EXPECT_EQ(back->tensors[1].shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(back->tensors[1].elements(), 2);
  EXPECT_EQ(back->tensors[1].values(), (std::vector<double>{7, -9}));
}

TEST(StateDumpTest, Float64ValuesComeBackExactly) {
  StateDump dump;
  const double d[2] = {0.1, 1e300};
  dump.tensors.push_back({"x", DumpTensor::Type::kFloat64, {2}, raw_of(d, sizeof d)});
  auto back = decode_state_dump(encode_state_dump(dump), "d");
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->tensors[0].values(), (std::vector<double>{0.1, 1e300}));
}

struct BadDump {
  const char* what;
  std::string bytes;
  std::string message;
};

TEST(StateDumpTest, EachBadFileIsOneLineNamingTheFileAndTheFault) {
  const std::string good = encode_state_dump(two_tensors());
  std::string wrong_version = good;
  wrong_version[8] = 9;
  // "step"'s elements start at 24 + 38 + 37 = 99; 3 bytes short of their 16.
  std::string bad_dtype = good;
  bad_dtype[24 + 4 + 1] = 5;  // the first tensor's dtype byte
  std::string short_count = good;
  short_count[24 + 4 + 1 + 1 + 4 + 8] = 8;  // "w" claims 8 bytes for its 3 floats' 12
  const std::vector<BadDump> cases = {
      {"magic", "CTNPDUMQ" + good.substr(8), "f.bin: not a state dump"},
      {"empty", "", "f.bin: truncated at byte 0 (reading the magic)"},
      {"version", wrong_version, "f.bin: format version 9, this build reads 1"},
      {"dtype", bad_dtype, "f.bin: tensor 'w': dtype 5"},
      {"truncated", good.substr(0, good.size() - 3), "f.bin: truncated at byte 99 (reading the elements)"},
      {"trailing", good + "x", "f.bin: trailing bytes after the last tensor"},
  };
  for (const BadDump& c : cases) {
    auto got = decode_state_dump(c.bytes, "f.bin");
    ASSERT_FALSE(got.is_ok()) << c.what;
    EXPECT_EQ(got.status().message(), c.message) << c.what;
  }
  // A byte count that does not match the shape is caught before the elements are read.
  auto got = decode_state_dump(short_count, "f.bin");
  ASSERT_FALSE(got.is_ok());
  EXPECT_EQ(got.status().message(), "f.bin: tensor 'w': 8 bytes for its shape's 12");
}

TEST(StateDumpTest, WriteMakesTheFolderAndNamesTheFileByRank) {
  const std::string dir = ::testing::TempDir() + "ct_state_dump/nested";
  std::filesystem::remove_all(::testing::TempDir() + "ct_state_dump");
  ASSERT_TRUE(write_state_dump(dir, two_tensors()).is_ok());
  EXPECT_EQ(state_dump_path(dir, 1), dir + "/rank-1.bin");
  auto back = read_state_dump(state_dump_path(dir, 1));
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(*read_file(state_dump_path(dir, 1)), encode_state_dump(two_tensors()));
  EXPECT_FALSE(read_state_dump(state_dump_path(dir, 0)).is_ok());
}

}  // namespace
}  // namespace clustertwin
