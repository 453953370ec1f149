#include "common/status.h"

#include <gtest/gtest.h>

namespace clustertwin {
namespace {

TEST(StatusTest, OkHasExitCodeZero) {
  EXPECT_TRUE(Status::ok().is_ok());
  EXPECT_EQ(Status::ok().exit_code(), 0);
  EXPECT_EQ(Status::ok().to_string(), "ok");
}

TEST(StatusTest, UserErrorsExitWithTwoAndOurFailuresWithOne) {
  EXPECT_EQ(Status::invalid_argument("x").exit_code(), 2);
  EXPECT_EQ(Status::not_found("x").exit_code(), 2);
  EXPECT_EQ(Status::io_error("x").exit_code(), 1);
  EXPECT_EQ(Status::internal("x").exit_code(), 1);
}

TEST(StatusTest, ContextIsPrefixed) {
  const Status s = Status::invalid_argument("field 'dur': -5 is negative").with_context("run.json");
  EXPECT_EQ(s.message(), "run.json: field 'dur': -5 is negative");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(Status::ok().with_context("x").is_ok());
}

TEST(StatusTest, LeadingWordIsReplacedOnlyWhenItIsAWholeWord) {
  const auto flags = {std::pair<std::string_view, std::string_view>{"samples", "--samples"},
                      std::pair<std::string_view, std::string_view>{"max_steps", "--steps"}};
  const Status value = with_leading_word_replaced(Status::invalid_argument("samples 0: must be >= 1"), flags);
  EXPECT_EQ(value.message(), "--samples 0: must be >= 1");
  EXPECT_EQ(value.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(with_leading_word_replaced(Status::not_found("max_steps: none"), flags).message(), "--steps: none");
  // "sample length": not the word "samples"; a word inside the message stays.
  EXPECT_EQ(with_leading_word_replaced(Status::invalid_argument("sample length 1: too short"), flags).message(),
            "sample length 1: too short");
  EXPECT_EQ(with_leading_word_replaced(Status::invalid_argument("samplesize 3"), flags).message(), "samplesize 3");
  EXPECT_EQ(with_leading_word_replaced(Status::invalid_argument("x: samples 0"), flags).message(), "x: samples 0");
  EXPECT_EQ(with_leading_word_replaced(Status::invalid_argument("samples"), flags).message(), "samples");
  EXPECT_TRUE(with_leading_word_replaced(Status::ok(), flags).is_ok());
}

TEST(StatusOrTest, HoldsValueOrStatus) {
  StatusOr<int> v = 42;
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(*v, 42);
  EXPECT_TRUE(v.status().is_ok());
  StatusOr<int> e = Status::not_found("nothing");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().message(), "nothing");
}

}  // namespace
}  // namespace clustertwin
