// The FlexMARL workload: response lengths follow each agent's log-normal,
// cut at the limit, reproducibly; the batch settings are checked.

#include "models/flexmarl/workload.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace clustertwin::models::flexmarl {
namespace {

TEST(WorkloadTest, ResponseLengthsFollowEachAgentsDistribution) {
  Workload w = ma_workload();
  w.global_batch = 20000;  // many samples, to see the distributions
  const auto lengths = response_lengths(w, 1, 0);
  ASSERT_EQ(lengths.size(), 3u);
  for (size_t a = 0; a < 3; ++a) {
    std::vector<int> l = lengths[a];
    ASSERT_EQ(l.size(), 20000u);
    EXPECT_GE(*std::min_element(l.begin(), l.end()), 1);
    EXPECT_LE(*std::max_element(l.begin(), l.end()), 8192);
    std::nth_element(l.begin(), l.begin() + 10000, l.end());
    // The sample median's relative standard error is about 1.25 sigma / sqrt(n) < 1%: 3% is over 3 of them.
    EXPECT_NEAR(l[10000], w.agents[a].median_response_tokens, 0.03 * w.agents[a].median_response_tokens)
        << w.agents[a].name;
  }
  // After-sales (median 2,048, sigma 1.1) is cut at 8,192 when z > ln 4 / 1.1 = 1.26: P = 10.4%.
  const double cut = static_cast<double>(std::count(lengths[2].begin(), lengths[2].end(), 8192)) / 20000;
  EXPECT_NEAR(cut, 0.104, 0.01);
}

TEST(WorkloadTest, SameSeedAndStepSameLengths) {
  const Workload w = ma_workload();
  EXPECT_EQ(response_lengths(w, 5, 3), response_lengths(w, 5, 3));
  EXPECT_NE(response_lengths(w, 5, 3), response_lengths(w, 5, 4));
  EXPECT_NE(response_lengths(w, 5, 3), response_lengths(w, 6, 3));
}

TEST(WorkloadTest, BatchSettingsAreChecked) {
  Workload w = ma_workload();
  EXPECT_TRUE(validate(w).is_ok());
  w.micro_batch = 128;
  EXPECT_EQ(validate(w).message(), "workload MA: micro-batch 128 must be in [1, 64] (the global batch)");
  w.micro_batch = 24;
  EXPECT_EQ(validate(w).message(), "workload MA: micro-batch 24 does not divide the global batch 64");
  w.micro_batch = 16;
  w.group = 7;
  EXPECT_EQ(validate(w).message(), "workload MA: group 7 does not divide the global batch 64");
}

TEST(WorkloadTest, CustomAgentsFanOutFromTheFirst) {
  const Workload w = workload_for(std::vector<spec::LlmSpec>(5, *spec::llm_spec("32B")));
  ASSERT_EQ(w.agents.size(), 5u);
  EXPECT_EQ(w.agents[0].turn, 0);
  EXPECT_EQ(w.agents[4].turn, 1);
  EXPECT_NE(w.agents[1].median_response_tokens, w.agents[2].median_response_tokens);
  EXPECT_TRUE(validate(w).is_ok());
}

// CA by name: the order agent first, then pricing (the 32B agent) and inventory as independent branches; a
// name outside the paper's two is refused with the allowed list.
TEST(WorkloadTest, PaperWorkloadsByName) {
  auto ca = paper_workload("ca");
  ASSERT_TRUE(ca.is_ok()) << ca.status().message();
  EXPECT_EQ(ca->name, "CA");
  EXPECT_TRUE(validate(*ca).is_ok());
  ASSERT_EQ(ca->agents.size(), 3u);
  EXPECT_EQ(ca->agents[0].turn, 0);
  EXPECT_EQ(ca->agents[1].turn, 1);
  EXPECT_EQ(ca->agents[2].turn, 1);
  EXPECT_GT(ca->agents[1].model.params(), 2 * ca->agents[0].model.params()) << "pricing is the 32B agent";
  EXPECT_EQ(ca->agents[0].model.params(), ca->agents[2].model.params());
  auto ma = paper_workload("MA");
  ASSERT_TRUE(ma.is_ok());
  EXPECT_EQ(ma->name, "MA");
  EXPECT_EQ(paper_workload("da").status().message(), "'da': unknown workload (allowed: ma, ca)");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
