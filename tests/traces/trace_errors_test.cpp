// One test per class of malformed trace, each asserting the message text:
// a user must be able to find the event and the field from the one line.

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "traces/validator.h"

namespace clustertwin::traces {
namespace {

constexpr char kMeta[] =
    R"("metadata": {"format_version": 1, "source": "real", "system": "t", "world_size": 2,
                    "clustertwin_version": "0.1.0", "streams": ["compute", "comm"]})";

std::string with_events(const std::string& events) {
  return std::string("{") + kMeta + R"(, "traceEvents": [
    {"ph": "X", "name": "ok", "cat": "compute", "pid": 0, "tid": 0, "ts": 0, "dur": 1},
    )" + events +
         "]}";
}

std::string error_for(const std::string& text) {
  const Status s = validate_trace_text(text, "bad.json", nullptr);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.exit_code(), 2) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "not one line: " << s.message();
  return s.message();
}

TEST(TraceErrorsTest, MissingField) {
  EXPECT_EQ(error_for(with_events(R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 5})")),
            "bad.json: event 1: missing field 'dur'");
}

TEST(TraceErrorsTest, WrongType) {
  EXPECT_EQ(
      error_for(with_events(R"({"ph": "X", "name": "k", "cat": "compute", "pid": "0", "tid": 0, "ts": 5, "dur": 1})")),
      "bad.json: event 1: field 'pid': expected an integer, got a string ('0')");
  EXPECT_EQ(
      error_for(with_events(
          R"({"ph": "X", "name": "k", "cat": "comm", "pid": 0, "tid": 0, "ts": 5, "dur": 1, "args": {"bytes": 1.5}})")),
      "bad.json: event 1: field 'args.bytes': expected an integer, got a number (1.5)");
}

TEST(TraceErrorsTest, NegativeDuration) {
  EXPECT_EQ(
      error_for(with_events(R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 5, "dur": -5})")),
      "bad.json: event 1: field 'dur': -5 is negative (must be >= 0)");
}

// A task's thread CPU time (real runs) is a number >= 0.
TEST(TraceErrorsTest, BadCpuTime) {
  EXPECT_EQ(
      error_for(with_events(
          R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 5, "dur": 1, "args": {"cpu_us": -2}})")),
      "bad.json: event 1: field 'args.cpu_us': -2 is negative (must be >= 0)");
  EXPECT_EQ(
      error_for(with_events(
          R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 5, "dur": 1, "args": {"cpu_us": "1"}})")),
      "bad.json: event 1: field 'args.cpu_us': expected a number, got a string ('1')");
}

// An imported task's completed gradient bytes are an integer >= 0.
TEST(TraceErrorsTest, BadGradBytes) {
  EXPECT_EQ(
      error_for(with_events(
          R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 5, "dur": 1, "args": {"grad_bytes": -4}})")),
      "bad.json: event 1: field 'args.grad_bytes': -4 is out of range (must be >= 0)");
  EXPECT_EQ(
      error_for(with_events(
          R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 5, "dur": 1, "args": {"grad_bytes": 1.5}})")),
      "bad.json: event 1: field 'args.grad_bytes': expected an integer, got a number (1.5)");
}

TEST(TraceErrorsTest, UnknownCategory) {
  EXPECT_EQ(
      error_for(with_events(R"({"ph": "X", "name": "k", "cat": "gpu", "pid": 0, "tid": 0, "ts": 5, "dur": 1})")),
      "bad.json: event 1: field 'cat': unknown category 'gpu' (allowed: compute, comm, copy, lookup, host, idle)");
}

TEST(TraceErrorsTest, TruncatedFile) {
  const std::string whole =
      with_events(R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": 5, "dur": 1})");
  const std::string cut = whole.substr(0, whole.find("\"ts\": 5"));
  const std::string message = error_for(cut);
  EXPECT_EQ(message.rfind("bad.json: truncated: the input ends at byte ", 0), 0u) << message;
  EXPECT_NE(message.find("(in event 1 of 'traceEvents')"), std::string::npos) << message;
}

TEST(TraceErrorsTest, TruncatedGzipFile) {
  const std::string path = ::testing::TempDir() + "ct_trunc.json.gz";
  std::string events;
  for (int i = 0; i < 20000; ++i) {
    events += R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 0, "ts": )" + std::to_string(i) +
              R"(, "dur": 1},)";
  }
  events.pop_back();
  ASSERT_TRUE(write_file_atomically(path, with_events(events)).is_ok());
  auto bytes = read_file(path);  // decompressed; recompress a cut copy by hand below
  ASSERT_TRUE(bytes.is_ok());
  const std::string cut_path = ::testing::TempDir() + "ct_trunc_cut.json.gz";
  ASSERT_TRUE(write_file_atomically(cut_path, bytes->substr(0, bytes->size() / 2)).is_ok());
  const Status s = validate_trace(cut_path, nullptr);
  EXPECT_EQ(s.exit_code(), 2);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
}

TEST(TraceErrorsTest, NotJson) {
  EXPECT_EQ(error_for("this is not a trace"), "bad.json: not JSON: unexpected 't' at byte 0");
  EXPECT_EQ(error_for("[1, 2]"), "bad.json: top level: expected an object with 'traceEvents', got an array");
}

TEST(TraceErrorsTest, UnsupportedPhase) {
  EXPECT_EQ(error_for(with_events(R"({"ph": "B", "name": "k", "pid": 0, "tid": 0, "ts": 5})")),
            "bad.json: event 1: field 'ph': unsupported phase 'B' (allowed: X for complete events, M for names)");
}

TEST(TraceErrorsTest, RankOutsideWorld) {
  EXPECT_EQ(
      error_for(with_events(R"({"ph": "X", "name": "k", "cat": "compute", "pid": 2, "tid": 0, "ts": 5, "dur": 1})")),
      "bad.json: event 1: field 'pid': 2 is not a rank of this trace (metadata world_size 2)");
}

TEST(TraceErrorsTest, StreamNotListed) {
  EXPECT_EQ(
      error_for(with_events(R"({"ph": "X", "name": "k", "cat": "compute", "pid": 0, "tid": 2, "ts": 5, "dur": 1})")),
      "bad.json: event 1: field 'tid': 2 names no stream (metadata streams lists 2)");
}

TEST(TraceErrorsTest, MissingMetadata) {
  EXPECT_EQ(error_for(R"({"traceEvents": []})"), "bad.json: top level: missing field 'metadata'");
  EXPECT_EQ(error_for(R"({"metadata": {"format_version": 1}, "traceEvents": []})"),
            "bad.json: metadata: missing field 'source'");
  EXPECT_EQ(error_for(R"({"metadata": {"format_version": 9}, "traceEvents": []})"),
            "bad.json: metadata: field 'format_version': version 9 is not supported (this build reads 1)");
}

TEST(TraceErrorsTest, ValidTraceHasNoError) {
  ValidationStats stats;
  const Status s = validate_trace_text(
      with_events(R"({"ph": "X", "name": "k", "cat": "comm", "pid": 1, "tid": 1, "ts": 5, "dur": 1})"), "good.json",
      &stats);
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(stats.events, 2);
  EXPECT_DOUBLE_EQ(stats.span_us, 6.0);  // first start 0, last end 5 + 1
}

}  // namespace
}  // namespace clustertwin::traces
