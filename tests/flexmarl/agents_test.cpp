// --agents as a user writes it: counts, sizes, mixtures, and each bad term.

#include "models/flexmarl/agents.h"

#include <gtest/gtest.h>

namespace clustertwin::models::flexmarl {
namespace {

TEST(AgentsTest, CountsAndSizesInTheOrderWritten) {
  auto a = parse_agents("3x32B+7x14B");
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_EQ(a->size(), 10u);
  EXPECT_EQ(a->front().name, "32B");
  EXPECT_EQ((*a)[3].name, "14B");
  EXPECT_EQ(parse_agents("14B")->size(), 1u);
  EXPECT_EQ(parse_agents("15x14B")->size(), 15u);
}

TEST(AgentsTest, BadTermsAreOneLine) {
  EXPECT_EQ(parse_agents("3x13B").status().message(),
            "'3x13B': unknown model size '13B' (known: 0.5B, 1.5B, 7B, 14B, 32B, 72B)");
  EXPECT_EQ(parse_agents("0x14B").status().message(), "'0x14B': '0x14B' has 0 agents (needs >= 1)");
  EXPECT_EQ(parse_agents("ax14B").status().message(), "'ax14B': 'ax14B' is not COUNTxSIZE (for example 3x14B)");
  EXPECT_EQ(parse_agents("3x14B+").status().message(),
            "'3x14B+': an empty term (terms are joined by '+', for example 3x32B+7x14B)");
  EXPECT_EQ(parse_agents("65x0.5B").status().message(), "'65x0.5B': more than 64 agents");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
