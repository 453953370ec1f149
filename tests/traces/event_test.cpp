// traces/event.h: the fixed names of categories and sources (traces/FORMAT.md),
// both ways, and an event's derived times.

#include "traces/event.h"

#include <gtest/gtest.h>

namespace clustertwin::traces {
namespace {

TEST(EventTest, EveryCategoryRoundTripsThroughItsName) {
  for (Category c : kAllCategories) {
    auto back = category_from_name(category_name(c));
    ASSERT_TRUE(back.has_value()) << category_name(c);
    EXPECT_EQ(*back, c);
  }
  EXPECT_EQ(category_list(), "compute, comm, copy, lookup, host, idle");
}

TEST(EventTest, UnknownNamesAreNotMatchedLoosely) {
  EXPECT_FALSE(category_from_name("Compute").has_value());
  EXPECT_FALSE(category_from_name("communication").has_value());
  EXPECT_FALSE(category_from_name("").has_value());
  EXPECT_FALSE(source_from_name("simulated").has_value());
}

TEST(EventTest, EverySourceRoundTripsThroughItsName) {
  EXPECT_EQ(source_name(Source::kReal), "real");
  EXPECT_EQ(source_name(Source::kSim), "sim");
  EXPECT_EQ(source_name(Source::kImported), "imported");
  for (Source s : {Source::kReal, Source::kSim, Source::kImported})
    EXPECT_EQ(source_from_name(source_name(s)), s);
}

TEST(EventTest, EndAndLaunchEndAddTheirDurations) {
  Event e;
  e.ts_us = 10;
  e.dur_us = 2.5;
  EXPECT_EQ(e.end_us(), 12.5);
  EXPECT_FALSE(e.launch_end_us().has_value());  // no launch linked
  e.host_ts_us = 4;
  EXPECT_EQ(e.launch_end_us(), 4.0);  // a launch of unknown length
  e.host_dur_us = 1.5;
  EXPECT_EQ(e.launch_end_us(), 5.5);
}

}  // namespace
}  // namespace clustertwin::traces
