// Progress in a log or a pipe: one line per update, and nothing left open for
// end_progress to close. (On a terminal the same updates redraw one line;
// ctest runs tests with stderr on a pipe.)

#include "common/progress.h"

#include <gtest/gtest.h>

namespace clustertwin {
namespace {

TEST(ProgressTest, InALogEachUpdateIsALineOfItsOwn) {
  if (progress_redraws()) GTEST_SKIP() << "stderr is a terminal here";
  ::testing::internal::CaptureStderr();
  show_progress(false, "[%d/%d] %s", 1, 3, "first");
  show_progress(false, "[%d/%d] %s", 2, 3, "second");
  show_progress(true, "[%d/%d] %s", 3, 3, "done");
  end_progress();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "[1/3] first\n[2/3] second\n[3/3] done\n");
}

TEST(ProgressTest, EndProgressWritesNothingWhenNoLineIsOpen) {
  if (progress_redraws()) GTEST_SKIP() << "stderr is a terminal here";
  ::testing::internal::CaptureStderr();
  show_progress(false, "step %d", 7);  // in a log, already ended by its newline
  end_progress();
  end_progress();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "step 7\n");
}

TEST(ProgressTest, ALongUpdateIsCutAtTheBufferNotOverrun) {
  if (progress_redraws()) GTEST_SKIP() << "stderr is a terminal here";
  const std::string long_text(2000, 'x');
  ::testing::internal::CaptureStderr();
  show_progress(true, "%s", long_text.c_str());
  const std::string out = ::testing::internal::GetCapturedStderr();
  // 511 characters and the terminating zero fill the 512-byte buffer; the newline follows.
  EXPECT_EQ(out, std::string(511, 'x') + "\n");
}

}  // namespace
}  // namespace clustertwin
