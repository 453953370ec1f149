// run_isolated: a body's result comes back from its child; SimGrid's own
// failure (a critical log line, then an abort) comes back as one
// InvalidArgument line, its log lines kept off the terminal.

#include "sim/core/isolated.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace clustertwin::sim {
namespace {

TEST(IsolatedTest, TheChildsResultComesBack) {
  auto r = run_isolated([]() -> StatusOr<std::string> { return std::string("step 1.5 ms"); });
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(*r, "step 1.5 ms");
  auto bad = run_isolated([]() -> StatusOr<std::string> { return Status::invalid_argument("steps 0"); });
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "steps 0");
}

TEST(IsolatedTest, SimGridsAbortIsOneLineQuotingItsCriticalMessage) {
  ::testing::internal::CaptureStderr();
  auto r = run_isolated([]() -> StatusOr<std::string> {
    std::fputs("[0.000001] ./src/kernel/resource/Model.cpp:99: [root/CRITICAL] The Impossible Did Happen (yet again)\n",
               stderr);
    std::fputs("  ->  0# 0x00007F772AEDC12F in /lib/x86_64-linux-gnu/libsimgrid.so.3.32\n\n", stderr);
    std::fflush(stderr);
    std::abort();
  });
  const std::string passed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "the simulation cannot finish (SimGrid: The Impossible Did Happen (yet again)): a rate or a duration of "
            "the inputs is likely beyond any machine's");
  EXPECT_EQ(passed, "");  // SimGrid's lines and its backtrace were held back, not printed
}

TEST(IsolatedTest, OtherLinesPassThroughAndSimGridsFollowASuccess) {
  ::testing::internal::CaptureStderr();
  auto r = run_isolated([]() -> StatusOr<std::string> {
    std::fputs("[1/2] torchrec at 16 workers\n", stderr);
    std::fputs("[0.5] ./src/kernel/EngineImpl.cpp:1: [ker_engine/WARNING] a warning\n", stderr);
    std::fflush(stderr);
    return std::string("done");
  });
  const std::string passed = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(passed,
            "[1/2] torchrec at 16 workers\n[0.5] ./src/kernel/EngineImpl.cpp:1: [ker_engine/WARNING] a warning\n");
}

TEST(IsolatedTest, ADeathWithoutSimGridNamesTheSignal) {
  auto r = run_isolated([]() -> StatusOr<std::string> { std::abort(); });
  EXPECT_EQ(r.status().code(), Status::Code::kInternal);
  EXPECT_NE(r.status().message().find("died of signal 6"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace clustertwin::sim
