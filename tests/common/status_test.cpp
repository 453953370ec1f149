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
