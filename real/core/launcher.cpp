#include "real/core/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "real/core/supervisor.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char** environ;

namespace clustertwin::real {
namespace {

constexpr int kMaxProcs = 1024;
constexpr double kMaxGraceS = 24 * 3600;
constexpr int kMaxRestarts = 1000;
constexpr const char* kRankVariables[] = {"RANK",        "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                          "MASTER_ADDR", "MASTER_PORT"};

std::string format_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

Status validate(const LaunchOptions& o) {
  if (o.nproc < 1 || o.nproc > kMaxProcs) {
    return Status::invalid_argument("nproc " + std::to_string(o.nproc) + ": must be in 1.." +
                                    std::to_string(kMaxProcs));
  }
  if (o.master_port && (*o.master_port < 1 || *o.master_port > 65535)) {
    return Status::invalid_argument("master_port " + std::to_string(*o.master_port) + ": not a port number (1..65535)");
  }
  if (o.master_addr.empty()) {
    return Status::invalid_argument("master_addr '': empty (give a host name or an IP address)");
  }
  if (!(o.grace_s >= 0 && o.grace_s <= kMaxGraceS)) {
    return Status::invalid_argument("grace_s " + format_seconds(o.grace_s) + ": must be in 0.." +
                                    format_seconds(kMaxGraceS) + " seconds");
  }
  if (o.max_restarts < 0 || o.max_restarts > kMaxRestarts) {
    return Status::invalid_argument("max_restarts " + std::to_string(o.max_restarts) + ": must be in 0.." +
                                    std::to_string(kMaxRestarts));
  }
  const bool checkpoints = std::any_of(o.args.begin(), o.args.end(), [](const std::string& a) {
    return a == "--checkpoint-dir" || a.rfind("--checkpoint-dir=", 0) == 0;
  });
  if (o.max_restarts > 0 && !checkpoints) {
    return Status::invalid_argument("max_restarts " + std::to_string(o.max_restarts) +
                                    ": the command has no --checkpoint-dir, so a restart could not resume (add "
                                    "--checkpoint-dir DIR --checkpoint-every N)");
  }
  if (o.program.empty() && o.args.empty()) {
    return Status::invalid_argument(
        "launch: nothing to run: give the command after '--' (e.g. 'clustertwin launch --nproc 2 -- run nestpipe') "
        "or --program");
  }
  return Status::ok();
}

bool is_executable_file(const std::string& path) {
  struct stat info = {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The path every child executes: `program` as given when it holds a '/', else
// looked up in PATH as a shell would; this executable when empty.
StatusOr<std::string> resolve_program(const std::string& program) {
  if (program.empty()) {
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    return n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string("/proc/self/exe");
  }
  if (program.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
    for (size_t start = 0; start <= dirs.size();) {
      const size_t colon = std::min(dirs.find(':', start), dirs.size());
      const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
      if (is_executable_file(dir + "/" + program)) return dir + "/" + program;
      start = colon + 1;
    }
    return Status::not_found("program " + program + ": not found in PATH");
  }
  struct stat info = {};
  if (::stat(program.c_str(), &info) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Status::not_found("program " + program + ": no such file");
    return Status::invalid_argument("program " + program + ": " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) return Status::invalid_argument("program " + program + ": not a regular file");
  if (::access(program.c_str(), X_OK) != 0) return Status::invalid_argument("program " + program + ": not executable");
  return program;
}

// The launcher holds 2 pipes per child: the soft limit on open files goes up
// toward the hard one while it runs, and back down in each child and at the end.
class FileLimit {
 public:
  explicit FileLimit(int nproc) {
    const rlim_t needed = static_cast<rlim_t>(2 * nproc + 64);
    if (::getrlimit(RLIMIT_NOFILE, &old_) != 0 || old_.rlim_cur >= needed) return;
    struct rlimit raised = old_;
    raised.rlim_cur = old_.rlim_max == RLIM_INFINITY ? needed : std::min(needed, old_.rlim_max);
    raised_ = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
  }
  ~FileLimit() { restore(); }
  FileLimit(const FileLimit&) = delete;
  FileLimit& operator=(const FileLimit&) = delete;

  /// Async-signal-safe in practice (one system call): a forked child calls it.
  void restore() const {
    if (raised_) ::setrlimit(RLIMIT_NOFILE, &old_);
  }

 private:
  struct rlimit old_ = {};
  bool raised_ = false;
};

Status make_pipe(int fds[2]) {
  if (::pipe(fds) != 0) {
    const int error = errno;
    std::string hint;
    if (error == EMFILE) hint = " (each rank needs 2 files open in the launcher; raise 'ulimit -n')";
    return Status::io_error(std::string("pipe: ") + std::strerror(error) + hint);
  }
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  return Status::ok();
}

void close_pair(int fds[2]) {
  for (int i = 0; i < 2; ++i) {
    if (fds[i] >= 0) ::close(fds[i]);
    fds[i] = -1;
  }
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In a forked child: `from` becomes `to` and survives exec.
void move_fd(int from, int to) {
  if (from == to) {
    ::fcntl(to, F_SETFD, 0);
  } else {
    ::dup2(from, to);
  }
}

// What every child gets; only the rank variables differ between children.
struct SpawnPlan {
  std::string program;
  std::vector<std::string> argv;      // argv[0] is the program
  std::vector<std::string> base_env;  // the launcher's, without the rank variables
  std::string master_addr;
  int master_port = 0;
  int nproc = 0;
  int attempt = 0;  // CT_LAUNCH_ATTEMPT
  int dev_null = -1;
  const FileLimit* file_limit = nullptr;
};

// Forks and executes rank `rank`; on success `child` holds its pid (also its
// process group) and the read ends of its stdout and stderr pipes.
Status spawn(const SpawnPlan& plan, int rank, const SignalGuard& signals, ChildProcess* child) {
  std::vector<std::string> env = plan.base_env;
  const std::string r = std::to_string(rank), n = std::to_string(plan.nproc);
  for (const std::string& v :
       {"RANK=" + r, "WORLD_SIZE=" + n, "LOCAL_RANK=" + r, "LOCAL_WORLD_SIZE=" + n, "MASTER_ADDR=" + plan.master_addr,
        "MASTER_PORT=" + std::to_string(plan.master_port), "CT_LAUNCH_ATTEMPT=" + std::to_string(plan.attempt)}) {
    env.push_back(v);
  }
  std::vector<std::string> argv = plan.argv;
  std::vector<char*> envp = pointers(env), argvp = pointers(argv);

  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_status[2] = {-1, -1};
  Status status = make_pipe(out);
  if (status.is_ok()) status = make_pipe(err);
  if (status.is_ok()) status = make_pipe(exec_status);
  if (!status.is_ok()) {
    close_pair(out);
    close_pair(err);
    close_pair(exec_status);
    return status.with_context("launch: rank " + r);
  }

  // Blocked across fork so that no handler of ours runs in the child before exec.
  sigset_t all, old_mask;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old_mask);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec: another thread may have held a lock at fork.
    ::setpgid(0, 0);
#ifdef __linux__
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher killed by SIGKILL takes its children along
    if (::getppid() != parent) ::_exit(127);
#endif
    move_fd(plan.dev_null, 0);
    move_fd(out[1], 1);
    move_fd(err[1], 2);
    signals.restore();
    plan.file_limit->restore();
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    ::execve(plan.program.c_str(), argvp.data(), envp.data());
    const int error = errno;
    [[maybe_unused]] const ssize_t written = ::write(exec_status[1], &error, sizeof error);
    ::_exit(127);
  }
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  for (int* fds : {out, err, exec_status})
    ::close(fds[1]);
  if (pid < 0) {
    for (int* fds : {out, err, exec_status})
      ::close(fds[0]);
    return Status::io_error("launch: rank " + r + ": fork: " + std::strerror(fork_error));
  }
  // Also here: a signal sent to the group right after spawn returns must find it.
  ::setpgid(pid, pid);
  child->pid = pid;
  child->rank = rank;
  child->out = OutputStream(out[0], STDOUT_FILENO, rank);
  child->err = OutputStream(err[0], STDERR_FILENO, rank);

  // The child writes errno here when exec fails; exec closes the pipe when it succeeds.
  int error = 0;
  ssize_t got = 0;
  do {
    got = ::read(exec_status[0], &error, sizeof error);
  } while (got < 0 && errno == EINTR);
  ::close(exec_status[0]);
  if (got == static_cast<ssize_t>(sizeof error)) {
    const std::string why = plan.program + ": cannot execute: " + std::strerror(error);
    // ENOEXEC: a script without "#!" or a binary for another machine, the user's to fix.
    if (error == ENOEXEC || error == EACCES) return Status::invalid_argument("program " + why);
    return Status::io_error("launch: rank " + r + ": " + why);
  }
  return Status::ok();
}

// A launcher's line on stderr, written whole.
void announce(const std::string& line) {
  const std::string text = "clustertwin launch: " + line + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

// One attempt: every rank spawned and supervised until all have exited.
struct Attempt {
  int code = 0;
  std::string failure;  // the first rank's failure, empty when none
  bool interrupted = false;
};

StatusOr<Attempt> run_attempt(const SpawnPlan& plan, const SignalGuard& signals, double grace_s, bool may_restart) {
  Supervisor supervisor(signals, grace_s);
  if (may_restart) supervisor.defer_failure_report();
  Status status;
  for (int rank = 0; rank < plan.nproc && status.is_ok(); ++rank) {
    ChildProcess child;
    status = spawn(plan, rank, signals, &child);
    if (child.pid > 0) supervisor.add(std::move(child));
  }
  if (!status.is_ok()) {
    supervisor.abort();
    return status;
  }
  Attempt a;
  a.code = supervisor.run();
  a.failure = supervisor.failure();
  a.interrupted = supervisor.interrupted();
  return a;
}

// Attempts until one succeeds, the launcher is signalled, or max_restarts
// restarts have failed; each restart resumes (--resume) at a fresh port.
StatusOr<int> launch_with_restarts(const LaunchOptions& options, const SignalGuard& signals, SpawnPlan* plan) {
  const int restarts = options.max_restarts;
  for (int attempt = 0;; ++attempt) {
    plan->attempt = attempt;
    StatusOr<Attempt> a = run_attempt(*plan, signals, options.grace_s, restarts > 0);
    if (!a.is_ok()) return a.status();
    if (a->code == 0 || a->interrupted || restarts == 0) return a->code;
    if (attempt == restarts) {
      announce("giving up after " + std::to_string(restarts) + " restarts; the last: " + a->failure);
      return a->code;
    }
    announce("restart " + std::to_string(attempt + 1) + " of " + std::to_string(restarts) + ": " + a->failure +
             "; relaunching " + std::to_string(plan->nproc) + " ranks with --resume");
    if (attempt == 0 && std::find(plan->argv.begin(), plan->argv.end(), "--resume") == plan->argv.end()) {
      plan->argv.push_back("--resume");
    }
    if (!options.master_port) {
      StatusOr<int> port = pick_free_port();
      if (!port.is_ok()) return port.status();
      plan->master_port = *port;
    }
  }
}

}  // namespace

StatusOr<int> pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::io_error(std::string("launch: socket: ") + std::strerror(errno));
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    return Status::io_error(std::string("launch: cannot find a free port on 127.0.0.1: ") + std::strerror(error));
  }
  ::close(fd);
  return static_cast<int>(ntohs(address.sin_port));
}

StatusOr<int> launch(const LaunchOptions& options) {
  CT_RETURN_IF_ERROR(validate(options));
  SpawnPlan plan;
  StatusOr<std::string> program = resolve_program(options.program);
  if (!program.is_ok()) return program.status();
  plan.program = *program;
  plan.argv.push_back(plan.program);
  plan.argv.insert(plan.argv.end(), options.args.begin(), options.args.end());
  if (options.master_port) {
    plan.master_port = *options.master_port;
  } else {
    StatusOr<int> port = pick_free_port();
    if (!port.is_ok()) return port.status();
    plan.master_port = *port;
  }
  plan.master_addr = options.master_addr;
  plan.nproc = options.nproc;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool ours = false;
    for (const char* variable : kRankVariables)
      ours = ours || name == variable;
    if (!ours) plan.base_env.emplace_back(text);
  }

  SignalGuard signals;
  CT_RETURN_IF_ERROR(signals.install());
  plan.dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (plan.dev_null < 0) return Status::io_error(std::string("launch: /dev/null: ") + std::strerror(errno));
  const FileLimit file_limit(options.nproc);
  plan.file_limit = &file_limit;
  StatusOr<int> code = launch_with_restarts(options, signals, &plan);
  ::close(plan.dev_null);
  return code;
}

}  // namespace clustertwin::real
