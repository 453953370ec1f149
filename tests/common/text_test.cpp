#include "models/common/text.h"

#include <gtest/gtest.h>

namespace clustertwin {
namespace {

TEST(QuoteForMessageTest, KeepsMessagesOnOneLine) {
  EXPECT_EQ(quote_for_message("abc"), "'abc'");
  EXPECT_EQ(quote_for_message("a\nb\tc"), "'a\\nb\\x09c'");
  EXPECT_EQ(quote_for_message(std::string(61, 'x')), "'" + std::string(60, 'x') + "...'");  // cut after 60
}

}  // namespace
}  // namespace clustertwin
