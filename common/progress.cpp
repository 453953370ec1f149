#include "common/progress.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace clustertwin {
namespace {

// An update shown on a terminal and not yet ended by a newline.
std::atomic<bool> g_open{false};

}  // namespace

bool progress_redraws() {
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  return tty;
}

void show_progress(bool last, const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  if (progress_redraws()) {
    // Trailing blanks clear what a longer previous update left.
    std::fprintf(stderr, "\r%s   %s", text, last ? "\n" : "");
    g_open = !last;
  } else {
    std::fprintf(stderr, "%s\n", text);
  }
  std::fflush(stderr);
}

void end_progress() {
  if (g_open.exchange(false)) {
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
}

}  // namespace clustertwin
