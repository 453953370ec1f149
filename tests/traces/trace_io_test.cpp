#include <gtest/gtest.h>

#include <filesystem>

#include "common/file_io.h"
#include "tests/traces/trace_test_util.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"
#include "traces/validator.h"

namespace clustertwin::traces {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "ct_trace_io_" + name;
}

class RoundTripTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTripTest, WriteThenReadGivesEqualTrace) {
  const std::string path = temp_path(GetParam());
  const Trace original = testing::sample_trace();
  ASSERT_TRUE(write_trace(path, original).is_ok());
  auto back = read_trace(path);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->metadata, original.metadata);
  ASSERT_EQ(back->events.size(), original.events.size());
  for (size_t i = 0; i < original.events.size(); ++i)
    EXPECT_EQ(back->events[i], original.events[i]) << "event " << i;
  ValidationStats stats;
  EXPECT_TRUE(validate_trace(path, &stats).is_ok());
  EXPECT_EQ(stats.events, 5);  // 2 ranks x (forward + all2all) + 1 idle
  EXPECT_EQ(stats.ranks_seen, 2);
}

INSTANTIATE_TEST_SUITE_P(PlainAndGzip, RoundTripTest, ::testing::Values("rt.json", "rt.json.gz"));

TEST(TraceIoTest, GzipIsSmallerAndReadsTheSame) {
  Trace big = testing::sample_trace();
  for (int i = 0; i < 2000; ++i)
    big.events.push_back(big.events[i % 4]);
  ASSERT_TRUE(write_trace(temp_path("big.json"), big).is_ok());
  ASSERT_TRUE(write_trace(temp_path("big.json.gz"), big).is_ok());
  EXPECT_LT(std::filesystem::file_size(temp_path("big.json.gz")) * 5,
            std::filesystem::file_size(temp_path("big.json")));
  auto plain = read_trace(temp_path("big.json"));
  auto gz = read_trace(temp_path("big.json.gz"));
  ASSERT_TRUE(plain.is_ok() && gz.is_ok());
  EXPECT_EQ(plain->events, gz->events);
}

TEST(TraceIoTest, WriterOutputIsDeterministic) {
  ASSERT_TRUE(write_trace(temp_path("d1.json"), testing::sample_trace()).is_ok());
  ASSERT_TRUE(write_trace(temp_path("d2.json"), testing::sample_trace()).is_ok());
  EXPECT_EQ(*read_file(temp_path("d1.json")), *read_file(temp_path("d2.json")));
}

TEST(TraceIoTest, WriterDiscardsUnclosedTrace) {
  const std::string path = temp_path("unclosed.json");
  std::filesystem::remove(path);
  {
    auto writer = TraceWriter::create(path, testing::sample_trace().metadata);
    ASSERT_TRUE(writer.is_ok());
    (*writer)->write(testing::sample_trace().events[0]);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceIoTest, WriterRejectsConfigThatIsNotAnObject) {
  Metadata m = testing::sample_trace().metadata;
  m.config_json = "[1, 2]";
  auto writer = TraceWriter::create(temp_path("badcfg.json"), m);
  ASSERT_FALSE(writer.is_ok());
  EXPECT_NE(writer.status().message().find("field 'config': not a JSON object: [1, 2]"), std::string::npos);
}

TEST(TraceIoTest, ReadsMetadataPlacedAfterTheEvents) {
  const std::string text = R"({"traceEvents": [
      {"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 1, "dur": 2, "args": {"other": [1, {"x": 2}]}}],
    "metadata": {"format_version": 1, "source": "sim", "system": "s", "world_size": 1, "clustertwin_version": "0.1.0"},
    "displayTimeUnit": "ms"})";
  auto reader = TraceReader::from_text(text, "late.json");
  Event e;
  ASSERT_TRUE(reader->next(&e));
  EXPECT_FALSE(reader->has_metadata());
  EXPECT_EQ(e.name, "k");
  EXPECT_FALSE(reader->next(&e));
  ASSERT_TRUE(reader->status().is_ok()) << reader->status().message();
  ASSERT_TRUE(reader->has_metadata());
  EXPECT_EQ(reader->metadata().source, Source::kSim);
}

TEST(TraceIoTest, EventIndexCountsNameEvents) {
  const std::string text = R"({"traceEvents": [
      {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "rank 0"}},
      {"ph": "X", "name": "k", "cat": "comm", "pid": 0, "tid": 0, "ts": 1, "dur": 2}]})";
  auto reader = TraceReader::from_text(text, "m.json");
  Event e;
  ASSERT_TRUE(reader->next(&e));
  EXPECT_EQ(reader->event_index(), 1);  // the name event is index 0
  EXPECT_EQ(e.category, Category::kComm);
}

}  // namespace
}  // namespace clustertwin::traces
