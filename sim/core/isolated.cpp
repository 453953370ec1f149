#include "sim/core/isolated.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

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

}  // namespace

StatusOr<std::string> run_isolated(const std::function<StatusOr<std::string>()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return Status::internal(std::string("cannot create a pipe: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::internal(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    // Status code, then the payload or the message.
    std::string out;
    try {
      StatusOr<std::string> result = body();
      out = result.is_ok()
                ? "0\n" + result.value()
                : std::to_string(static_cast<int>(result.status().code())) + "\n" + result.status().message();
    } catch (const std::exception& e) {
      out = std::to_string(static_cast<int>(Status::Code::kInternal)) + "\nsimulation failed: " + e.what();
    }
    const bool ok = write_all(fds[1], out);
    ::close(fds[1]);
    std::fflush(stdout);
    ::_exit(ok ? 0 : 3);
  }
  ::close(fds[1]);
  std::string received;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return Status::internal("the simulation process died of signal " + std::to_string(WTERMSIG(status)) + " (" +
                            strsignal(WTERMSIG(status)) + ")");
  }
  const size_t newline = received.find('\n');
  if (newline == std::string::npos) {
    return Status::internal("the simulation process exited with status " + std::to_string(WEXITSTATUS(status)) +
                            " without a result");
  }
  const int code = std::atoi(received.substr(0, newline).c_str());
  std::string payload = received.substr(newline + 1);
  switch (static_cast<Status::Code>(code)) {
    case Status::Code::kOk:
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

}  // namespace clustertwin::sim
