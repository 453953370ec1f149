// traces/kineto_reader.h: one Kineto file streamed event by event. Its exact
// times, the top level's members before or after the events, the args the
// import reads, and a bad complete event named by its index and field.

#include "traces/kineto_reader.h"

#include <gtest/gtest.h>

#include <fstream>

namespace clustertwin::traces::kineto {
namespace {

std::string write_kineto(const std::string& name, const std::string& json) {
  const std::string path = ::testing::TempDir() + "ct_kineto_reader_" + name + ".json";
  std::ofstream(path) << json;
  return path;
}

StatusOr<std::vector<KinetoEvent>> read_all(const std::string& path, FileHeader* header) {
  std::vector<KinetoEvent> events;
  Status s = read_kineto_file(path, header, [&](const KinetoEvent& e) {
    events.push_back(e);
    return Status::ok();
  });
  if (!s.is_ok()) return s;
  return events;
}

TEST(KinetoReaderTest, MicrosKeepLargeTimesExact) {
  // 1.7e18 ns from the epoch plus 1.25 us: a double alone would round the sum to 256 ns.
  const Micros ts = with_base(Micros{1, 0.25}, 1700000000000000123LL);
  EXPECT_EQ(ts.whole, 1700000000000001LL);
  EXPECT_NEAR(ts.frac, 0.373, 1e-12);  // 0.25 + 123 ns
  const Micros later = with_base(Micros{3, 0.5}, 1700000000000000123LL);
  EXPECT_NEAR(micros_between(ts, later), 2.25, 1e-12);
  EXPECT_TRUE(ts < later);
  Micros carry{10, 2.5};
  carry.normalise();
  EXPECT_EQ(carry.whole, 12);
  EXPECT_EQ(carry.frac, 0.5);
  Micros negative{10, -0.25};
  negative.normalise();
  EXPECT_EQ(negative.whole, 9);
  EXPECT_EQ(negative.frac, 0.75);
}

TEST(KinetoReaderTest, EventsComeInFileOrderWithTheArgsTheImportReads) {
  const std::string path = write_kineto("events", R"({
    "traceEvents": [
      {"ph": "X", "name": "ncclKernel", "cat": "kernel", "pid": 0, "tid": "stream 7", "ts": 100.5, "dur": 20,
       "args": {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1024, "Group size": 4,
                "Process Group Ranks": "[0, 2, 4, 6]", "Global rank start": 0, "Global rank stride": 2,
                "correlation": 77, "Rank": -1}},
      {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
      {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 12, "tid": 12, "ts": 90, "dur": 5,
       "args": {"flops": 2e9, "Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"],
                "Process Group Ranks": "[0, 1, ...]"}},
      {"ph": "X", "name": "span", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 1}
    ],
    "distributedInfo": {"rank": 2, "world_size": 8},
    "deviceProperties": [{"name": "NVIDIA H200"}],
    "baseTimeNanoseconds": 1000
  })");
  FileHeader header;
  auto events = read_all(path, &header);
  ASSERT_TRUE(events.is_ok()) << events.status().message();
  ASSERT_EQ(events->size(), 4u);
  const KinetoEvent& nccl = (*events)[0];
  EXPECT_EQ(nccl.tid, 7);  // "stream 7"
  EXPECT_EQ(nccl.ts.whole, 100);
  EXPECT_EQ(nccl.ts.frac, 0.5);
  EXPECT_EQ(nccl.dur, 20);
  EXPECT_EQ(nccl.collective, "allreduce");
  EXPECT_EQ(nccl.in_nelems, 1024);
  EXPECT_EQ(nccl.group_size, 4);
  EXPECT_EQ(nccl.group_ranks, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(nccl.global_rank_stride, 2);
  EXPECT_EQ(nccl.correlation, 77);
  EXPECT_FALSE(nccl.rank_arg.has_value());  // -1: not a rank, left out
  EXPECT_EQ((*events)[1].name_arg, "GPU 0");
  const KinetoEvent& mm = (*events)[2];
  EXPECT_EQ(mm.flops, 2e9);
  EXPECT_EQ(mm.first_input_nelems, 64 * 32);
  EXPECT_EQ(mm.first_input_type, "float");
  EXPECT_TRUE(mm.group_ranks.empty());         // a truncated list is no list
  EXPECT_FALSE((*events)[3].pid.has_value());  // "Spans" names no device
  EXPECT_TRUE((*events)[3].has_pid);
  EXPECT_EQ(header.rank, 2);
  EXPECT_EQ(header.world_size, 8);
  EXPECT_EQ(header.device_name, "NVIDIA H200");
  EXPECT_EQ(header.base_ns, 1000);
}

TEST(KinetoReaderTest, ABadCompleteEventIsNamedByItsIndexAndField) {
  const std::string no_dur = write_kineto("no_dur", R"({"traceEvents": [
      {"ph": "i", "name": "instant", "pid": 0, "tid": 0, "ts": 1},
      {"ph": "X", "name": "k", "pid": 0, "tid": 0, "ts": 1}]})");
  FileHeader header;
  EXPECT_EQ(read_all(no_dur, &header).status().message(), no_dur + ": event 1: missing field 'dur'");
  const std::string negative = write_kineto("negative", R"({"traceEvents": [
      {"ph": "X", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": -2.5}]})");
  EXPECT_EQ(read_all(negative, &header).status().message(),
            negative + ": event 0: field 'dur': -2.5 is negative (must be >= 0)");
  const std::string no_events = write_kineto("no_events", R"({"schemaVersion": 1})");
  EXPECT_EQ(read_all(no_events, &header).status().message(), no_events + ": top level: missing field 'traceEvents'");
}

TEST(KinetoReaderTest, TheCallbacksErrorStopsTheReadAndAMissingFileIsNotFound) {
  const std::string path = write_kineto("stop", R"({"traceEvents": [
      {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 1, "dur": 1},
      {"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 2, "dur": 1}]})");
  FileHeader header;
  int seen = 0;
  Status s = read_kineto_file(path, &header, [&](const KinetoEvent& e) {
    ++seen;
    return Status::invalid_argument("stop at " + e.name);
  });
  EXPECT_EQ(s.message(), "stop at a");
  EXPECT_EQ(seen, 1);
  Status missing = read_kineto_file(::testing::TempDir() + "ct_kineto_reader_absent.json", &header,
                                    [](const KinetoEvent&) { return Status::ok(); });
  EXPECT_EQ(missing.code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace clustertwin::traces::kineto
