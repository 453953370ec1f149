#include "real/core/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace clustertwin::real {
namespace {

constexpr int kSignals[SignalGuard::kCount] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE};
constexpr size_t kMaxLine = 64 * 1024;  // a longer line is cut, so that a child without newlines cannot fill memory
constexpr int kMaxDrainReads = 64;      // per exited child: 4 MiB, then back to the loop
constexpr auto kFinalDrain = std::chrono::seconds(1);

int g_signal_pipe = -1;  // the write end; a signal handler reaches nothing but globals

void forward_to_pipe(int signo) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe, &byte, 1);  // a full pipe already says "look"
  errno = saved;
}

// Writes all of `text`; a launcher whose output is gone keeps supervising.
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n > 0) {
      text.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd wait = {fd, POLLOUT, 0};
      ::poll(&wait, 1, 100);
    } else if (n < 0 && errno != EINTR) {
      return;
    }
  }
}

void say(const std::string& line) {
  write_all(STDERR_FILENO, "clustertwin launch: " + line + "\n");
}

std::string signal_text(int signo) {
  const char* name = ::strsignal(signo);
  return std::to_string(signo) + " (" + (name != nullptr ? name : "unknown") + ")";
}

}  // namespace

// ---- SignalGuard ----

Status SignalGuard::install() {
  if (g_signal_pipe != -1) return Status::internal("launch: another launch is running in this process");
  if (::pipe(pipe_) != 0) return Status::io_error(std::string("launch: pipe: ") + std::strerror(errno));
  for (int fd : pipe_) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
  }
  g_signal_pipe = pipe_[1];
  for (int i = 0; i < kCount; ++i) {
    ::sigaction(kSignals[i], nullptr, &old_[i]);
    struct sigaction action = {};
    ::sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | (kSignals[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
    const bool ignored = !(old_[i].sa_flags & SA_SIGINFO) && old_[i].sa_handler == SIG_IGN;
    if (kSignals[i] == SIGPIPE) {
      action.sa_handler = SIG_IGN;
    } else if (ignored && kSignals[i] != SIGCHLD) {
      continue;  // started under nohup: stay deaf to it, and so do the children
    } else {
      action.sa_handler = forward_to_pipe;
    }
    ::sigaction(kSignals[i], &action, nullptr);
  }
  installed_ = true;
  return Status::ok();
}

SignalGuard::~SignalGuard() {
  if (installed_) {
    restore();
    g_signal_pipe = -1;
  }
  for (int fd : pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

int SignalGuard::next() const {
  unsigned char byte = 0;
  ssize_t n = 0;
  do {
    n = ::read(pipe_[0], &byte, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1 ? byte : 0;
}

void SignalGuard::restore() const {
  for (int i = 0; i < kCount; ++i)
    ::sigaction(kSignals[i], &old_[i], nullptr);
}

// ---- OutputStream ----

OutputStream::OutputStream(int fd, int to, int rank)
    : fd_(fd), to_(to), prefix_("[rank " + std::to_string(rank) + "] ") {
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

OutputStream::OutputStream(OutputStream&& other) noexcept {
  *this = std::move(other);
}

OutputStream& OutputStream::operator=(OutputStream&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    to_ = other.to_;
    prefix_ = std::move(other.prefix_);
    partial_ = std::move(other.partial_);
  }
  return *this;
}

bool OutputStream::pump() {
  if (fd_ < 0) return false;
  char buffer[64 * 1024];
  const ssize_t n = ::read(fd_, buffer, sizeof buffer);
  if (n < 0 && errno == EINTR) return true;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (n <= 0) {  // end of file, or an error that ends the stream all the same
    close();
    return false;
  }
  partial_.append(buffer, static_cast<size_t>(n));
  std::string lines;
  size_t start = 0;
  for (size_t newline; (newline = partial_.find('\n', start)) != std::string::npos; start = newline + 1) {
    lines.append(prefix_).append(partial_, start, newline + 1 - start);
  }
  partial_.erase(0, start);
  if (partial_.size() >= kMaxLine) {
    lines.append(prefix_).append(partial_).push_back('\n');
    partial_.clear();
  }
  if (!lines.empty()) write_all(to_, lines);
  return true;
}

void OutputStream::close() {
  if (fd_ < 0) return;
  if (!partial_.empty()) write_all(to_, prefix_ + partial_ + "\n");
  partial_.clear();
  ::close(fd_);
  fd_ = -1;
}

// ---- Supervisor ----

int Supervisor::run() {
  while (!all_exited()) {
    int timeout_ms = 1000;  // SIGCHLD wakes the poll; the timeout is only a safety net
    if (stopping_ && !killed_) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(kill_at_ - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, timeout_ms));
    }
    wait_for_events(timeout_ms);
    check_exits();
    if (stopping_ && !killed_ && Clock::now() >= kill_at_) {
      signal_groups(SIGKILL);
      killed_ = true;
    }
  }
  finish();
  return exit_code_;
}

void Supervisor::abort() {
  stopping_ = killed_ = true;
  finish();
}

bool Supervisor::all_exited() const {
  return std::all_of(children_.begin(), children_.end(), [](const ChildProcess& c) { return c.exited; });
}

void Supervisor::watch_open_streams(std::vector<pollfd>* fds, std::vector<OutputStream*>* streams) {
  for (ChildProcess& child : children_) {
    for (OutputStream* stream : {&child.out, &child.err}) {
      if (!stream->is_open()) continue;
      fds->push_back({stream->fd(), POLLIN, 0});
      streams->push_back(stream);
    }
  }
}

void Supervisor::wait_for_events(int timeout_ms) {
  std::vector<pollfd> fds = {{signals_.fd(), POLLIN, 0}};
  std::vector<OutputStream*> streams;
  watch_open_streams(&fds, &streams);
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;  // timeout, or EINTR: the caller loops
  if (fds[0].revents != 0) {
    for (int signo = signals_.next(); signo != 0; signo = signals_.next())
      on_signal(signo);
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    if (fds[i + 1].revents != 0) streams[i]->pump();
  }
}

void Supervisor::on_signal(int signo) {
  if (signo == SIGCHLD) return;  // check_exits runs after every wake-up
  if (!stopping_) {
    say("got signal " + signal_text(signo) + "; stopping all ranks");
    exit_code_ = 128 + signo;
    interrupted_ = true;
    stop(signo);
  } else if (!killed_) {
    say("got signal " + signal_text(signo) + " again; killing all ranks");
    signal_groups(SIGKILL);
    killed_ = true;
  }
}

void Supervisor::check_exits() {
  for (ChildProcess& child : children_) {
    if (child.exited) continue;
    siginfo_t info = {};
    int result = 0;
    do {
      result = ::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT);
    } while (result < 0 && errno == EINTR);
    if (result < 0) {  // ECHILD: someone else reaped it; nothing is known of how it ended
      child.exited = true;
      child.how = CLD_EXITED;
      continue;
    }
    if (info.si_pid != child.pid) continue;  // still running
    child.exited = true;
    child.how = info.si_code;
    child.status = info.si_status;
    // Its output is all in the pipes now: relay it before saying how it ended.
    for (OutputStream* stream : {&child.out, &child.err}) {
      for (int i = 0; i < kMaxDrainReads && stream->pump(); ++i) {
      }
    }
    if (stopping_ || (child.how == CLD_EXITED && child.status == 0)) continue;
    if (child.how == CLD_EXITED) {
      failure_ = "rank " + std::to_string(child.rank) + " exited with status " + std::to_string(child.status);
      exit_code_ = child.status;
    } else {
      failure_ = "rank " + std::to_string(child.rank) + " was killed by signal " + signal_text(child.status);
      exit_code_ = 1;
    }
    if (report_failure_) say(failure_);
    stop(SIGTERM);
  }
}

void Supervisor::stop(int signo) {
  stopping_ = true;
  kill_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s_));
  signal_groups(signo);
  if (grace_s_ <= 0) {
    signal_groups(SIGKILL);
    killed_ = true;
  }
}

void Supervisor::signal_groups(int signo) {
  // Exited children too: their zombies keep the group alive for any grandchild left in it.
  for (const ChildProcess& child : children_) {
    ::kill(-child.pid, signo);
    if (signo != SIGKILL) ::kill(-child.pid, SIGCONT);  // a stopped process acts on SIGTERM only once continued
  }
}

void Supervisor::finish() {
  signal_groups(SIGKILL);  // strays of ranks that exited, or everyone when aborting
  // The pipes close when the last writer dies; a stray that left its group may
  // hold one open, so wait a bounded time.
  const Clock::time_point give_up = Clock::now() + kFinalDrain;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<OutputStream*> streams;
    watch_open_streams(&fds, &streams);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(give_up - Clock::now()).count();
    if (streams.empty() || left <= 0) break;
    if (::poll(fds.data(), fds.size(), static_cast<int>(left)) <= 0) continue;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (fds[i].revents != 0) streams[i]->pump();
    }
  }
  for (ChildProcess& child : children_) {
    child.out.close();
    child.err.close();
    while (::waitpid(child.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace clustertwin::real
