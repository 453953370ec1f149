#include "traces/summary.h"

#include <gtest/gtest.h>

#include "tests/traces/trace_test_util.h"
#include "traces/trace_writer.h"

namespace clustertwin::traces {
namespace {

Event make(const char* key, Category cat, int64_t rank, int64_t stream, double ts, double dur) {
  Event e;
  e.name = std::string(key) + " event";
  e.cost_key = key;
  e.category = cat;
  e.rank = rank;
  e.stream = stream;
  e.ts_us = ts;
  e.dur_us = dur;
  return e;
}

//   rank 0  compute |C1 0-10|        |C2 20-34|
//           comm         |M1 5-------25|
//   rank 1  comm    |M2 0-4|
//                     |M3 2-6|
std::vector<Event> timeline() {
  return {make("fwd", Category::kCompute, 0, 0, 0, 10), make("fwd", Category::kCompute, 0, 0, 20, 14),
          make("a2a", Category::kComm, 0, 1, 5, 20), make("a2a", Category::kComm, 1, 1, 0, 4),
          make("a2a", Category::kComm, 1, 1, 2, 4)};
}

TEST(SummaryTest, PerKeyStatistics) {
  Metadata m;
  m.world_size = 2;
  const TraceSummary s = summarize_events(m, timeline());
  EXPECT_EQ(s.events, 5);
  EXPECT_DOUBLE_EQ(s.span_us, 34);  // first start 0, last end 20 + 14
  ASSERT_EQ(s.keys.size(), 2u);
  // Sorted by total: a2a 20 + 4 + 4 = 28 before fwd 10 + 14 = 24.
  EXPECT_EQ(s.keys[0].key, "a2a");
  EXPECT_EQ(s.keys[0].count, 3);
  EXPECT_DOUBLE_EQ(s.keys[0].total_us, 28);
  EXPECT_DOUBLE_EQ(s.keys[0].median_us, 4);  // sorted 4, 4, 20
  EXPECT_DOUBLE_EQ(s.keys[0].p10_us, 4);     // position 0.2 between 4 and 4
  EXPECT_DOUBLE_EQ(s.keys[0].p90_us, 16.8);  // position 1.8: 4 + 0.8 * (20 - 4)
  EXPECT_EQ(s.keys[1].key, "fwd");
  EXPECT_DOUBLE_EQ(s.keys[1].median_us, 12);  // midway between 10 and 14
  EXPECT_DOUBLE_EQ(s.keys[1].p10_us, 10.4);   // 10 + 0.1 * 4
  EXPECT_DOUBLE_EQ(s.keys[1].p90_us, 13.6);   // 10 + 0.9 * 4
}

TEST(SummaryTest, BusyTimeIsTheUnionOfIntervals) {
  Metadata m;
  m.world_size = 2;
  m.streams = {"compute", "comm"};
  const TraceSummary s = summarize_events(m, timeline());
  ASSERT_EQ(s.streams.size(), 3u);
  EXPECT_EQ(s.streams[0].stream_name, "compute");
  EXPECT_DOUBLE_EQ(s.streams[0].busy_us, 24);  // 10 + 14
  EXPECT_DOUBLE_EQ(s.streams[1].busy_us, 20);  // M1
  EXPECT_EQ(s.streams[2].rank, 1);
  EXPECT_DOUBLE_EQ(s.streams[2].busy_us, 6);  // M2 and M3 overlap: [0, 6)
}

TEST(SummaryTest, ExposedCommunicationIsCommNotOverlappedByCompute) {
  Metadata m;
  m.world_size = 2;
  const TraceSummary s = summarize_events(m, timeline());
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(s.ranks[0].comm_us, 20);
  // M1 [5, 25) overlaps C1 on [5, 10) and C2 on [20, 25): 10 of its 20 us are hidden.
  EXPECT_DOUBLE_EQ(s.ranks[0].exposed_comm_us, 10);
  EXPECT_DOUBLE_EQ(s.ranks[1].comm_us, 6);
  EXPECT_DOUBLE_EQ(s.ranks[1].exposed_comm_us, 6);  // no compute on rank 1
}

TEST(SummaryTest, CategoryTotalsSumDurations) {
  const TraceSummary s = summarize_events(Metadata(), timeline());
  EXPECT_DOUBLE_EQ(s.category_total_us[static_cast<size_t>(Category::kCompute)], 24);
  EXPECT_DOUBLE_EQ(s.category_total_us[static_cast<size_t>(Category::kComm)], 28);
}

TEST(SummaryTest, StreamedFileGivesTheSameSummaryAsMemory) {
  const std::string path = ::testing::TempDir() + "ct_summary.json.gz";
  const Trace t = testing::sample_trace();
  ASSERT_TRUE(write_trace(path, t).is_ok());
  auto from_file = summarize_trace(path);
  ASSERT_TRUE(from_file.is_ok()) << from_file.status().message();
  EXPECT_EQ(summary_to_json(*from_file), summary_to_json(summarize_events(t.metadata, t.events)));
  EXPECT_NE(format_summary(*from_file).find("dense_fwd"), std::string::npos);
}

TEST(PercentileTest, InterpolatesLinearly) {
  EXPECT_DOUBLE_EQ(percentile_of_sorted({}, 50), 0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({7}, 90), 7);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({1, 2, 3, 4}, 100), 4);
}

}  // namespace
}  // namespace clustertwin::traces
