#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::real {

/// What `clustertwin launch` starts: `nproc` copies of `program args...`.
struct LaunchOptions {
  int nproc = 1;                          // 1..1024 processes on this machine
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR of every rank
  std::optional<int> master_port;         // MASTER_PORT; unset: a free port on the loopback
  std::string program;                    // a path, or a name looked up in PATH; empty: this executable
  double grace_s = 5.0;                   // SIGTERM to SIGKILL, seconds
  std::vector<std::string> args;          // argv[1..] of every rank
  /// Restarts of the whole group after a rank fails (0: none). Needs
  /// --checkpoint-dir among args: each restart appends --resume.
  int max_restarts = 0;
};

/// Starts `options.nproc` local processes and supervises them, as torchrun does.
///
/// ```
///              launcher -- stdout: "[rank R] line", stderr: "[rank R] line"
///       +---------+-----------------+        ^  one pipe per child and stream, read with poll()
///    rank 0    rank 1   ...   rank N-1       |  (a last line without newline gets one)
///   each in its own process group, so that the launcher signals a child's whole tree
/// ```
///
/// Every child runs `program args...` with the launcher's environment plus
/// RANK, WORLD_SIZE (= nproc), LOCAL_RANK (= RANK), LOCAL_WORLD_SIZE (= nproc),
/// MASTER_ADDR and MASTER_PORT, and /dev/null as stdin (a child in a
/// background process group that read the terminal would be stopped).
///
/// - All children exit 0: returns 0.
/// - A child exits with status S != 0 or is killed by a signal: writes one line
///   to stderr (`clustertwin launch: rank 2 exited with status 3`, or `... was
///   killed by signal 9 (Killed)`), sends SIGTERM to every child's process
///   group, SIGKILL after `grace_s`, and returns S (1 for a signal). Later
///   failures are consequences and are not reported.
/// - The launcher gets SIGINT, SIGTERM or SIGHUP: forwards it to every
///   child's process group, the same cleanup, and returns 128 + the signal;
///   a second one sends SIGKILL at once.
/// - With max_restarts R > 0, a rank's failure instead stops the group the
///   same way, prints `clustertwin launch: restart K of R: rank 1 was killed
///   by signal 9 (Killed); relaunching N ranks with --resume`, and starts every
///   rank again with a fresh MASTER_PORT (unless one was given), `--resume`
///   appended to args and CT_LAUNCH_ATTEMPT=K (0 on the first attempt); after
///   R restarts it gives up as without them, saying so with the last cause.
///   A signal to the launcher is never restarted.
/// In every case all children are reaped and their process groups killed
/// before returning, so that no stray grandchild outlives the launch. Output
/// written before a child exits is never lost; lines of one child's stream
/// keep their order, lines longer than 64 KiB are split.
///
/// Returns InvalidArgument/NotFound naming the field for bad options (nproc
/// outside 1..1024, a port outside 1..65535, nothing to run, a program that is
/// missing or not executable) and IoError when the system refuses a pipe, a
/// fork or an exec. Installs its own handlers for SIGCHLD, SIGINT, SIGTERM,
/// SIGHUP and SIGPIPE while it runs and restores the old ones; one launch at
/// a time per process.
StatusOr<int> launch(const LaunchOptions& options);

/// A free TCP port on 127.0.0.1, found by binding port 0 and reading it back.
/// Another process may take it before the rank 0 binds it; torchrun takes the
/// same chance.
StatusOr<int> pick_free_port();

}  // namespace clustertwin::real
