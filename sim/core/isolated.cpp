#include "sim/core/isolated.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

namespace clustertwin::sim {
namespace {

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// SimGrid's log lines ("[0.000001] ./src/kernel/...: [root/CRITICAL] ...", "[host:actor:(1) 2.5] ...") and the
// backtrace lines that follow a critical one ("  ->  0# ...").
bool is_simgrid_line(const std::string& line) {
  if (line.rfind("  ->  ", 0) == 0) return true;
  return !line.empty() && line[0] == '[' && line.find("] ./src/") != std::string::npos;
}

// What the child wrote to its standard error: passed through line by line, SimGrid's lines held back.
class ChildStderr {
 public:
  void take(const char* data, size_t n) {
    pending_.append(data, n);
    size_t newline = 0;
    while ((newline = pending_.find('\n')) != std::string::npos) {
      line(pending_.substr(0, newline + 1));
      pending_.erase(0, newline + 1);
    }
  }
  void finish() {
    if (!pending_.empty()) line(pending_);
    pending_.clear();
  }
  void print_held() const {
    for (const std::string& l : held_)
      std::fputs(l.c_str(), stderr);
  }
  // SimGrid's first critical message, without its prefix; "" when there is none.
  std::string critical() const {
    for (const std::string& l : held_) {
      const size_t at = l.find("/CRITICAL] ");
      if (at == std::string::npos) continue;
      std::string text = l.substr(at + 11);
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.'))
        text.pop_back();
      return text;
    }
    return "";
  }

 private:
  void line(const std::string& l) {
    // A blank line ends SimGrid's backtrace.
    const bool blank = l.find_first_not_of(" \n") == std::string::npos;
    if (is_simgrid_line(l) || (blank && !held_.empty())) {
      held_.push_back(l);
    } else {
      std::fputs(l.c_str(), stderr);
    }
  }
  std::string pending_;
  std::vector<std::string> held_;
};

// Reads the result pipe and the child's standard error until both close.
std::string drain(int result_fd, int stderr_fd, ChildStderr* child_stderr) {
  std::string received;
  char buffer[1 << 16];
  pollfd fds[2] = {{result_fd, POLLIN, 0}, {stderr_fd, POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        p.fd = -1;
        --open;
      } else if (&p == &fds[0]) {
        received.append(buffer, static_cast<size_t>(n));
      } else {
        child_stderr->take(buffer, static_cast<size_t>(n));
      }
    }
  }
  child_stderr->finish();
  return received;
}

// The child's side: its standard error into `err_fd`, the body's status code then payload (or message) into
// `result_fd`.
[[noreturn]] void run_child(const std::function<StatusOr<std::string>()>& body, int result_fd, int err_fd) {
  ::dup2(err_fd, STDERR_FILENO);
  ::close(err_fd);
  std::string out;
  try {
    StatusOr<std::string> result = body();
    out = result.is_ok() ? "0\n" + result.value()
                         : std::to_string(static_cast<int>(result.status().code())) + "\n" + result.status().message();
  } catch (const std::exception& e) {
    out = std::to_string(static_cast<int>(Status::Code::kInternal)) + "\nsimulation failed: " + e.what();
  }
  const bool ok = write_all(result_fd, out);
  ::close(result_fd);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(ok ? 0 : 3);
}

// What the child returned, from its exit `status`, what it wrote to the result pipe and its standard error.
StatusOr<std::string> child_result(int status, const std::string& received, const ChildStderr& child_stderr) {
  const std::string simgrid = child_stderr.critical();
  const size_t newline = received.find('\n');
  if (!simgrid.empty() && (WIFSIGNALED(status) || newline == std::string::npos)) {
    return Status::invalid_argument("the simulation cannot finish (SimGrid: " + simgrid +
                                    "): a rate or a duration of the inputs is likely beyond any machine's");
  }
  if (WIFSIGNALED(status)) {
    return Status::internal("the simulation process died of signal " + std::to_string(WTERMSIG(status)) + " (" +
                            strsignal(WTERMSIG(status)) + ")");
  }
  if (newline == std::string::npos) {
    return Status::internal("the simulation process exited with status " + std::to_string(WEXITSTATUS(status)) +
                            " without a result");
  }
  const int code = std::atoi(received.substr(0, newline).c_str());
  std::string payload = received.substr(newline + 1);
  switch (static_cast<Status::Code>(code)) {
    case Status::Code::kOk:
      child_stderr.print_held();
      return payload;
    case Status::Code::kInvalidArgument:
      return Status::invalid_argument(payload);
    case Status::Code::kNotFound:
      return Status::not_found(payload);
    case Status::Code::kIoError:
      return Status::io_error(payload);
    default:
      return Status::internal(payload);
  }
}

}  // namespace

StatusOr<std::string> run_isolated(const std::function<StatusOr<std::string>()>& body) {
  int fds[2];
  int err_fds[2];
  if (::pipe(fds) != 0) return Status::internal(std::string("cannot create a pipe: ") + std::strerror(errno));
  if (::pipe(err_fds) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::internal(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::internal(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::close(err_fds[0]);
    run_child(body, fds[1], err_fds[1]);
  }
  ::close(fds[1]);
  ::close(err_fds[1]);
  ChildStderr child_stderr;
  const std::string received = drain(fds[0], err_fds[0], &child_stderr);
  ::close(fds[0]);
  ::close(err_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return child_result(status, received, child_stderr);
}

}  // namespace clustertwin::sim
