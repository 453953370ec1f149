#pragma once

// The parts of `launch` (launcher.h) that watch running children: signals,
// prefixed output and the stop sequence. Not meant for other callers.

#include <poll.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::real {

/// Turns SIGCHLD, SIGINT, SIGTERM and SIGHUP into bytes on a pipe that poll()
/// watches (the self-pipe trick), ignores SIGPIPE (a closed stdout must not kill
/// the launcher and orphan its children), and puts the old dispositions back
/// when destroyed. A signal the launcher was started with ignored (nohup) stays
/// ignored. One guard at a time per process: a signal handler sees only globals.
class SignalGuard {
 public:
  static constexpr int kCount = 5;  // the signals it handles

  SignalGuard() = default;
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  /// Installs the handlers; Internal if another guard is installed, IoError if no pipe.
  Status install();

  /// The read end for poll().
  int fd() const { return pipe_[0]; }

  /// The next signal received, or 0 when none is waiting.
  int next() const;

  /// Puts back the dispositions the process had before `install`. Async-signal-safe:
  /// a forked child calls it before exec.
  void restore() const;

 private:
  int pipe_[2] = {-1, -1};
  struct sigaction old_[kCount] = {};
  bool installed_ = false;
};

/// One stream (stdout or stderr) of one child: what the child writes to its
/// pipe is written to the launcher's own stream as "[rank R] line\n". Whole
/// lines go out in one write, so lines of different ranks never mix.
class OutputStream {
 public:
  OutputStream() = default;
  /// Takes `fd` (made non-blocking); lines go to `to`.
  OutputStream(int fd, int to, int rank);
  OutputStream(OutputStream&& other) noexcept;
  OutputStream& operator=(OutputStream&& other) noexcept;
  ~OutputStream() { close(); }

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  /// Reads once and writes the complete lines. True when it got bytes (call
  /// again to drain); false when the pipe is empty for now or at end of file,
  /// where the stream closes itself.
  bool pump();

  /// Writes a last unfinished line with a newline and closes the pipe.
  void close();

 private:
  int fd_ = -1;
  int to_ = -1;
  std::string prefix_;   // "[rank R] "
  std::string partial_;  // the start of a line not yet ended
};

/// A started child. It is its own process group leader, so `pid` is also the
/// group to signal; an exited child stays a zombie (seen with WNOWAIT) until
/// the end, which keeps its pid and group id from being reused meanwhile.
struct ChildProcess {
  pid_t pid = -1;
  int rank = 0;
  bool exited = false;
  int how = 0;     // CLD_EXITED, CLD_KILLED or CLD_DUMPED
  int status = 0;  // the exit status or the signal
  OutputStream out, err;
};

/// Watches the children of one launch until all have exited; see `launch`.
class Supervisor {
 public:
  Supervisor(const SignalGuard& signals, double grace_s) : signals_(signals), grace_s_(grace_s) {}

  void add(ChildProcess child) { children_.push_back(std::move(child)); }

  /// Relays output and waits; stops everyone on the first failure or a signal.
  /// Returns the launcher's exit code.
  int run();

  /// Kills every child now and cleans up (spawning failed half-way).
  void abort();
  /// After run(): how the first failure ended ("rank 1 was killed by signal 9
  /// (Killed)"), empty when none; and whether the launcher itself got a signal.
  const std::string& failure() const { return failure_; }
  bool interrupted() const { return interrupted_; }
  /// The caller reports failure() itself (a launch that may restart).
  void defer_failure_report() { report_failure_ = false; }

 private:
  using Clock = std::chrono::steady_clock;

  bool all_exited() const;
  /// Adds a POLLIN entry to `fds` for every open output pipe, and its stream to `streams`.
  void watch_open_streams(std::vector<pollfd>* fds, std::vector<OutputStream*>* streams);
  void wait_for_events(int timeout_ms);
  void on_signal(int signo);
  void check_exits();
  void stop(int signo);
  void signal_groups(int signo);
  void finish();

  const SignalGuard& signals_;
  double grace_s_;
  std::vector<ChildProcess> children_;
  bool stopping_ = false;  // the stop sequence started: SIGTERM (or the launcher's signal) sent
  bool killed_ = false;    // SIGKILL sent
  Clock::time_point kill_at_;
  int exit_code_ = 0;
  std::string failure_;
  bool interrupted_ = false;
  bool report_failure_ = true;
};

}  // namespace clustertwin::real
