#include "common/text.h"

#include <gtest/gtest.h>

namespace clustertwin {
namespace {

TEST(QuoteForMessageTest, KeepsMessagesOnOneLine) {
  EXPECT_EQ(quote_for_message("abc"), "'abc'");
  EXPECT_EQ(quote_for_message("a\nb\tc"), "'a\\nb\\x09c'");
  EXPECT_EQ(quote_for_message(std::string(61, 'x')), "'" + std::string(60, 'x') + "...'");  // cut after 60
}

TEST(OnOneLineTest, EscapesWhatWouldBreakTheLineAndKeepsTheRestWhole) {
  EXPECT_EQ(on_one_line("node 96 ('a\nb'): bad"), "node 96 ('a\\nb'): bad");
  EXPECT_EQ(on_one_line(std::string(100, 'x')), std::string(100, 'x'));  // not cut
  EXPECT_EQ(on_one_line("caf\xC3\xA9\r"), "caf\xC3\xA9\\x0D");           // UTF-8 kept, \r escaped
}

TEST(SplitCommasTest, KeepsEmptyItemsForTheCallerToName) {
  EXPECT_EQ(split_commas("128,256,1536"), (std::vector<std::string>{"128", "256", "1536"}));
  EXPECT_EQ(split_commas("8"), (std::vector<std::string>{"8"}));
  EXPECT_EQ(split_commas(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_commas(",8,"), (std::vector<std::string>{"", "8", ""}));
}

TEST(RatioOrDashTest, ARatioOrNone) {
  EXPECT_EQ(ratio_or_dash(1.554), "1.55x");
  EXPECT_EQ(ratio_or_dash(12), "12.00x");
  EXPECT_EQ(ratio_or_dash(0), "-");  // no baseline in the run
  EXPECT_EQ(ratio_or_dash(-1), "-");
}

TEST(WithThousandsTest, GroupsWholeNumbers) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1536), "1,536");
  EXPECT_EQ(with_thousands(401793.4), "401,793");
  EXPECT_EQ(with_thousands(-1234567), "-1,234,567");
  EXPECT_EQ(with_thousands(1e12), "1,000,000,000,000");
  EXPECT_EQ(with_thousands(2e15), "2e+15");
}

}  // namespace
}  // namespace clustertwin
