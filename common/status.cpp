#include "common/status.h"

namespace clustertwin {

int Status::exit_code() const {
  if (is_ok()) return 0;
  if (code_ == Code::kCheckFailed) return 3;
  return is_user_error() ? 2 : 1;
}

Status Status::with_context(std::string_view prefix) const {
  if (is_ok()) return *this;
  return Status(code_, std::string(prefix) + ": " + message_);
}

std::string Status::to_string() const {
  return is_ok() ? std::string("ok") : message_;
}

}  // namespace clustertwin
