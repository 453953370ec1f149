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

Status with_leading_word_replaced(const Status& status,
                                  std::initializer_list<std::pair<std::string_view, std::string_view>> words) {
  if (status.is_ok()) return status;
  const std::string& m = status.message();
  for (const auto& [word, replacement] : words) {
    if (m.size() > word.size() && m.compare(0, word.size(), word) == 0 &&
        (m[word.size()] == ' ' || m[word.size()] == ':'))
      return status.with_message(std::string(replacement) + m.substr(word.size()));
  }
  return status;
}

}  // namespace clustertwin
