// A table of measured steps (calibrators/llm/steps_table.h): columns by
// name with their defaults, quoted fields, and a row the twin cannot model
// refused with one line naming the row and the field.

#include "calibrators/llm/steps_table.h"

#include <gtest/gtest.h>

namespace clustertwin::calibrators::llm {
namespace {

const char* const kHeader =
    "workers,tp,pp,dp,micro_batch,global_batch,hidden,heads,layers,seq,recompute,schedule,step_ms\n";
TEST(StepsTableTest, ReadsColumnsByNameWithDefaultsAndQuotes) {
  const std::string text =
      std::string("id,note,") + kHeader + "a,\"x, y\",8,8,1,1,1,64,4096,32,32,1024,none,1f1b,100\n";
  auto rows = parse_steps_table(text, "t.csv");
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 1u);
  const StepRow& r = (*rows)[0];
  EXPECT_EQ(r.id, "a");
  EXPECT_EQ(r.workers, 8);
  EXPECT_EQ(r.setup.model.vocab, 51200);
  EXPECT_EQ(r.setup.split.recompute, models::llm::Recompute::kNone);
  EXPECT_DOUBLE_EQ(r.step_s, 0.1);
  EXPECT_EQ(csv_fields("a,\"b \"\"c\"\", d\",e"), (std::vector<std::string>{"a", "b \"c\", d", "e"}));
}

TEST(StepsTableTest, RefusesARowItCannotModelNamingTheRow) {
  const std::string text = std::string(kHeader) + "8,8,1,1,1,64,4096,32,32,1024,none,1f1b,100\n" +
                           "8,8,1,1,1,64,4096,4,32,1024,none,1f1b,100\n";
  EXPECT_EQ(parse_steps_table(text, "t.csv").status().message(),
            "t.csv: row 2 (line 3): cannot be modelled: tp 8: does not divide heads 4");
  EXPECT_EQ(parse_steps_table(std::string(kHeader) + "8,8,1,1,1,64,4096,32,32,1024,all,1f1b,100\n", "t.csv")
                .status()
                .message(),
            "t.csv: row 1 (line 2), column 'recompute': 'all' is not none, selective or full");
  EXPECT_EQ(parse_steps_table("workers,tp\n", "t.csv").status().message(), "t.csv: header: no column 'pp'");
  // A row of another split is skipped unread when the fit asks for one split.
  const std::string with_split = "split," + std::string(kHeader) + "fit,8,8,1,1,1,64,4096,32,32,1024,none,1f1b,100\n" +
                                 "test,8,8,1,1,1,64,4096,4,32,1024,none,1f1b,100\n";
  auto fit_rows = parse_steps_table(with_split, "t.csv", "fit");
  ASSERT_TRUE(fit_rows.is_ok()) << fit_rows.status().message();
  EXPECT_EQ(fit_rows->size(), 1u);
  EXPECT_FALSE(parse_steps_table(with_split, "t.csv").is_ok());
  EXPECT_EQ(parse_steps_table(with_split, "t.csv", "other").status().message(),
            "t.csv: no rows after the header of split 'other'");
  EXPECT_EQ(parse_steps_table(std::string(kHeader) + "8,8,1,1,1,64,4096,32,32,1024,none,1f1b,-3\n", "t.csv")
                .status()
                .message(),
            "t.csv: row 1 (line 2), column 'step_ms': '-3' is not a number > 0");
}

}  // namespace
}  // namespace clustertwin::calibrators::llm
