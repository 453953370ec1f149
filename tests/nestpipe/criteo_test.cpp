// The Criteo line parser (one message per class of malformed line), the key
// hash, and the streaming reader over plain and gzip files.

#include "models/nestpipe/criteo.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "models/nestpipe/key_generator.h"

namespace clustertwin::models::nestpipe {
namespace {

const std::string kData = std::string(CT_TEST_DATA_DIR) + "/criteo/";

// A good line: label 1, I(i+1) = i + 1, C(i+1) = 0000000a + i in hex.
std::vector<std::string> good_fields() {
  std::vector<std::string> fields = {"1"};
  for (int i = 0; i < kCriteoDenseFeatures; ++i)
    fields.push_back(std::to_string(i + 1));
  for (int i = 0; i < kCriteoCategoricalFeatures; ++i) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", 0xa + i);
    fields.push_back(hex);
  }
  return fields;
}

std::string join(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i)
    line += (i ? "\t" : "") + fields[i];
  return line;
}

TEST(ParseCriteoLineTest, ReadsValuesAndMissingFields) {
  std::vector<std::string> fields = good_fields();
  fields[2] = "-2";                                                        // I2: negative counts occur in the data set
  fields[5] = "";                                                          // I5 missing
  fields[14] = "DEADbeef";                                                 // C1: either case
  fields[39] = "";                                                         // C26 missing
  const auto sample = parse_criteo_line(join(fields) + "\r", "day_0", 1);  // a CRLF file
  ASSERT_TRUE(sample.is_ok()) << sample.status().message();
  EXPECT_EQ(sample->label, 1);
  EXPECT_EQ(sample->dense[0], 1);
  EXPECT_EQ(sample->dense[1], -2);
  EXPECT_FALSE(sample->dense[4].has_value());
  EXPECT_EQ(sample->dense[12], 13);
  EXPECT_EQ(sample->categorical[0], 0xdeadbeefu);
  EXPECT_EQ(sample->categorical[1], 0xbu);  // C2 = 0000000a + 1
  EXPECT_FALSE(sample->categorical[25].has_value());
}

TEST(ParseCriteoLineTest, OneMessagePerMistake) {
  struct Case {
    const char* what;
    std::function<void(std::vector<std::string>&)> spoil;
    std::string message;
  };
  const Case cases[] = {
      {"too few fields", [](auto& f) { f.resize(12); }, "day_0:7: expected 40 tab-separated fields, found 12"},
      {"too many fields", [](auto& f) { f.push_back("x"); }, "day_0:7: expected 40 tab-separated fields, found 41"},
      {"empty line", [](auto& f) { f = {""}; }, "day_0:7: expected 40 tab-separated fields, found 1"},
      {"label 2", [](auto& f) { f[0] = "2"; }, "day_0:7: field 'label' (column 1): '2' is not 0 or 1"},
      {"label missing", [](auto& f) { f[0] = ""; }, "day_0:7: field 'label' (column 1): '' is not 0 or 1"},
      {"word", [](auto& f) { f[5] = "abc"; }, "day_0:7: field 'I5' (column 6): 'abc' is not an integer"},
      {"fraction", [](auto& f) { f[1] = "1.5"; }, "day_0:7: field 'I1' (column 2): '1.5' is not an integer"},
      {"plus sign", [](auto& f) { f[13] = "+3"; }, "day_0:7: field 'I13' (column 14): '+3' is not an integer"},
      {"overflow", [](auto& f) { f[2] = "99999999999999999999"; },
       "day_0:7: field 'I2' (column 3): '99999999999999999999' is out of the 64-bit integer range"},
      {"not hex", [](auto& f) { f[16] = "xyz"; }, "day_0:7: field 'C3' (column 17): 'xyz' is not 8 hex digits"},
      {"7 digits", [](auto& f) { f[39] = "1234567"; },
       "day_0:7: field 'C26' (column 40): '1234567' is not 8 hex digits"},
      {"9 digits", [](auto& f) { f[14] = "68fd1e640"; },
       "day_0:7: field 'C1' (column 15): '68fd1e640' is not 8 hex digits"},
      {"hex-like", [](auto& f) { f[15] = "68fd1e6g"; },
       "day_0:7: field 'C2' (column 16): '68fd1e6g' is not 8 hex digits"},
      {"long text is cut", [](auto& f) { f[3] = std::string(50, 'z'); },
       "day_0:7: field 'I3' (column 4): '" + std::string(32, 'z') + "...' is not an integer"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> fields = good_fields();
    c.spoil(fields);
    const auto sample = parse_criteo_line(join(fields), "day_0", 7);
    ASSERT_FALSE(sample.is_ok()) << c.what;
    EXPECT_EQ(sample.status().code(), Status::Code::kInvalidArgument) << c.what;
    EXPECT_EQ(sample.status().message(), c.message) << c.what;
  }
}

TEST(CriteoKeyTest, FollowsTheDocumentedHash) {
  // key = mix64((column + 1) * 2^33 + (missing ? 2^32 : value)) mod vocabulary.
  EXPECT_EQ(criteo_key(2, 0x68fd1e64, 1000), static_cast<int64_t>(mix64((3ULL << 33) | 0x68fd1e64) % 1000));
  EXPECT_EQ(criteo_key(0, std::nullopt, 1000), static_cast<int64_t>(mix64((1ULL << 33) | (1ULL << 32)) % 1000));
  EXPECT_EQ(criteo_key(5, 17, 1), 0);  // one row: everything shares it
  // Distinct words: the same value in two columns, and missing against value 0,
  // give different keys in a table too large for chance collisions.
  constexpr int64_t kLarge = int64_t{1} << 40;
  EXPECT_NE(criteo_key(0, 0x1234, kLarge), criteo_key(1, 0x1234, kLarge));
  EXPECT_NE(criteo_key(0, 0, kLarge), criteo_key(0, std::nullopt, kLarge));

  const auto sample = parse_criteo_line(join(good_fields()), "x", 1);
  ASSERT_TRUE(sample.is_ok());
  const std::vector<int64_t> keys = criteo_keys(*sample, 1'000'000);
  ASSERT_EQ(keys.size(), 26u);
  EXPECT_EQ(keys[3], criteo_key(3, 0xa + 3, 1'000'000));
}

// Every sample of a file, or the reader's error.
StatusOr<std::vector<CriteoSample>> read_all(const std::string& path) {
  auto reader = CriteoReader::open(path);
  if (!reader.is_ok()) return reader.status();
  std::vector<CriteoSample> samples;
  CriteoSample sample;
  while ((*reader)->next(&sample))
    samples.push_back(sample);
  if (!(*reader)->status().is_ok()) return (*reader)->status();
  return samples;
}

TEST(CriteoReaderTest, ReadsTheHandWrittenFile) {
  const auto samples = read_all(kData + "sample.tsv");
  ASSERT_TRUE(samples.is_ok()) << samples.status().message();
  ASSERT_EQ(samples->size(), 4u);
  // Line 2 (see tests/data/criteo/README.md): label 1, I2 = -1, I3 missing,
  // C1 = 68fd1e64, C3 = DEADBEEF, C22 missing.
  const CriteoSample& second = (*samples)[1];
  EXPECT_EQ(second.label, 1);
  EXPECT_EQ(second.dense[1], -1);
  EXPECT_FALSE(second.dense[2].has_value());
  EXPECT_EQ(second.categorical[0], 0x68fd1e64u);
  EXPECT_EQ(second.categorical[2], 0xdeadbeefu);
  EXPECT_FALSE(second.categorical[21].has_value());
  // Line 3: nothing but the label.
  for (const auto& value : (*samples)[2].dense)
    EXPECT_FALSE(value.has_value());
  for (const auto& value : (*samples)[2].categorical)
    EXPECT_FALSE(value.has_value());
  // Line 4: C(i+1) = i mod 16.
  EXPECT_EQ((*samples)[3].categorical[17], 1u);
}

TEST(CriteoReaderTest, StopsAtTheFirstBadLineWithFileAndLine) {
  const std::string path = kData + "bad_integer.tsv";
  auto reader = CriteoReader::open(path);
  ASSERT_TRUE(reader.is_ok());
  CriteoSample sample;
  EXPECT_TRUE((*reader)->next(&sample));
  EXPECT_TRUE((*reader)->next(&sample));
  EXPECT_FALSE((*reader)->next(&sample));
  EXPECT_EQ((*reader)->status().message(), path + ":3: field 'I5' (column 6): 'abc' is not an integer");
  EXPECT_FALSE((*reader)->next(&sample));  // stays stopped
  EXPECT_EQ((*reader)->line_number(), 3);
}

TEST(CriteoReaderTest, MissingFileIsNotFound) {
  const auto reader = CriteoReader::open(kData + "no_such.tsv");
  ASSERT_FALSE(reader.is_ok());
  EXPECT_EQ(reader.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(reader.status().message(), kData + "no_such.tsv: no such file");
}

TEST(CriteoReaderTest, GzipAndLinesAcrossReadChunks) {
  // 20,000 lines of ~150 bytes = ~3 MB: lines straddle the reader's 1 MiB
  // chunks. The last line has no newline. Written plain and gzipped.
  std::string contents;
  std::vector<std::string> fields = good_fields();
  for (int i = 0; i < 20'000; ++i) {
    fields[1] = std::to_string(i);
    contents += join(fields) + (i + 1 < 20'000 ? "\n" : "");
  }
  for (const std::string name : {"ct_criteo_big.tsv", "ct_criteo_big.tsv.gz"}) {
    const std::string path = ::testing::TempDir() + name;
    ASSERT_TRUE(write_file_atomically(path, contents).is_ok());
    const auto samples = read_all(path);
    ASSERT_TRUE(samples.is_ok()) << samples.status().message();
    ASSERT_EQ(samples->size(), 20'000u) << name;
    for (int i = 0; i < 20'000; ++i)
      ASSERT_EQ((*samples)[static_cast<size_t>(i)].dense[0], i) << name << " line " << i + 1;
  }
}

}  // namespace
}  // namespace clustertwin::models::nestpipe
