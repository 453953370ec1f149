#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace clustertwin::detail {

CheckFailure::CheckFailure(std::string_view file, int line, std::string_view condition) {
  stream_ << "clustertwin internal error at " << file << ":" << line << ": check failed: " << condition << ": ";
}

CheckFailure::~CheckFailure() {
  const std::string text = stream_.str();
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace clustertwin::detail
