#include "models/common/text.h"

#include <gtest/gtest.h>

namespace clustertwin {
namespace {

TEST(QuoteForMessageTest, KeepsMessagesOnOneLine) {
  EXPECT_EQ(quote_for_message("abc"), "'abc'");
  EXPECT_EQ(quote_for_message("a\nb\tc"), "'a\\nb\\x09c'");
  EXPECT_EQ(quote_for_message(std::string(61, 'x')), "'" + std::string(60, 'x') + "...'");  // cut after 60
}

TEST(SplitCommasTest, KeepsEmptyItemsForTheCallerToName) {
  EXPECT_EQ(split_commas("128,256,1536"), (std::vector<std::string>{"128", "256", "1536"}));
  EXPECT_EQ(split_commas("8"), (std::vector<std::string>{"8"}));
  EXPECT_EQ(split_commas(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_commas(",8,"), (std::vector<std::string>{"", "8", ""}));
}

}  // namespace
}  // namespace clustertwin
