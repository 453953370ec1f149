#pragma once

#include <sstream>
#include <string_view>

namespace clustertwin::detail {

/// Collects the context of a failed CT_CHECK and aborts when destroyed.
/// A failed check is our bug (gem5's `panic`), never a user's mistake: those
/// are reported as a Status with exit code 2.
class CheckFailure {
 public:
  CheckFailure(std::string_view file, int line, std::string_view condition);
  [[noreturn]] ~CheckFailure();
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;

  template <class T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

}  // namespace clustertwin::detail

/// `CT_CHECK(cond) << "context"`: aborts with file, line, condition and context
/// when `cond` is false. For invariants of our own code only.
#define CT_CHECK(cond) \
  if (cond) {          \
  } else               \
    ::clustertwin::detail::CheckFailure(__FILE__, __LINE__, #cond)
