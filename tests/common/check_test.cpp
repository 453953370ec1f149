// CT_CHECK is for our own invariants: a failed one aborts with the file, the
// line, the condition's text and the context streamed after it; a passing one
// evaluates its condition once and its context never.

#include "common/check.h"

#include <gtest/gtest.h>

#include <string>

namespace clustertwin {
namespace {

TEST(CheckTest, APassingCheckEvaluatesItsConditionOnceAndItsContextNever) {
  int conditions = 0;
  int contexts = 0;
  auto context = [&contexts] { return ++contexts; };
  CT_CHECK(++conditions == 1) << "context " << context();
  EXPECT_EQ(conditions, 1);
  EXPECT_EQ(contexts, 0);
}

TEST(CheckTest, ACheckBindsAsOneStatementUnderAnIf) {
  // The macro's if/else must not capture a following else of the caller's.
  bool took_else = false;
  if (false)
    CT_CHECK(true) << "never";
  else
    took_else = true;
  EXPECT_TRUE(took_else);
}

TEST(CheckDeathTest, AFailedCheckAbortsNamingTheFileLineConditionAndContext) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int workers = 3;
  // The line of the check below: the message names it.
  const int line = __LINE__ + 1;
  auto fail = [&] { CT_CHECK(workers % 2 == 0) << "workers=" << workers; };
  const std::string want = "clustertwin internal error at .*check_test.cpp:" + std::to_string(line) +
                           ": check failed: workers % 2 == 0: workers=3";
  EXPECT_DEATH(fail(), want);
}

}  // namespace
}  // namespace clustertwin
