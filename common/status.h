#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace clustertwin {

/// The outcome of an operation that can fail because of what a user gave it.
///
/// Errors are values, as in LevelDB: a Status names the offending thing in its
/// message ("trace.json: event 12: field 'dur': -5 is negative"), and its code
/// tells the command line which exit code to use (see `exit_code`).
class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // bad input from the user: config, trace, flag, checkpoint (exit 2)
    kNotFound,         // a file or name the user gave does not exist (exit 2)
    kIoError,          // the operating system refused a read or write (exit 1)
    kInternal,         // our own bug or an impossible state (exit 1)
    kCheckFailed,      // the command ran, and a check the user asked for failed (validate --max-error: exit 3)
  };

  Status() = default;

  static Status ok() { return Status(); }
  static Status invalid_argument(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }
  static Status not_found(std::string message) { return Status(Code::kNotFound, std::move(message)); }
  static Status io_error(std::string message) { return Status(Code::kIoError, std::move(message)); }
  static Status internal(std::string message) { return Status(Code::kInternal, std::move(message)); }
  static Status check_failed(std::string message) { return Status(Code::kCheckFailed, std::move(message)); }

  bool is_ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  /// True for errors caused by what the user gave us (exit code 2).
  bool is_user_error() const { return code_ == Code::kInvalidArgument || code_ == Code::kNotFound; }

  /// The command-line exit code for this status: 0 ok, 2 user error, 3 a failed check, 1 otherwise.
  int exit_code() const;

  /// The same status with `prefix + ": "` put before the message; ok stays ok.
  Status with_context(std::string_view prefix) const;

  /// The same code with `message` instead (a caller's words for the same error); ok stays ok.
  Status with_message(std::string message) const { return is_ok() ? *this : Status(code_, std::move(message)); }

  /// "ok" or the message.
  std::string to_string() const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

/// `status` with the word its message starts with replaced: a message that
/// starts with the first of one of `words` (then a space or a colon:
/// "workers 8: too few ...") starts with its second instead ("--workers 8:
/// too few ..."); any other status comes back as it was. Libraries name their
/// fields; a program says which of its flags set each (cli::in_flag_words).
Status with_leading_word_replaced(const Status& status,
                                  std::initializer_list<std::pair<std::string_view, std::string_view>> words);

/// A value or the Status that explains why there is none.
template <class T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor): returned by value
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.is_ok()) status_ = Status::internal("StatusOr built from an ok Status without a value");
  }

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  // Not a std::variant: gcc 12 reports false maybe-uninitialized errors on it.
  Status status_;
  std::optional<T> value_;
};

}  // namespace clustertwin

/// Returns the status of `expr` from the enclosing function when it is not ok.
#define CT_RETURN_IF_ERROR(expr)                \
  do {                                          \
    ::clustertwin::Status ct_status_ = (expr);  \
    if (!ct_status_.is_ok()) return ct_status_; \
  } while (false)
