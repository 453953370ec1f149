// clustertwin launch --nproc N [...] -- ARGS...: the local launcher of the real executors.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/command.h"
#include "real/core/launcher.h"

namespace clustertwin::cli {
namespace {

constexpr char kFooter[] = R"(
Each rank runs PROGRAM ARGS... (by default PROGRAM is this clustertwin binary, so
'clustertwin launch --nproc 4 -- run nestpipe' runs 'clustertwin run nestpipe' 4 times)
with the launcher's environment plus the variables torchrun sets:
  RANK, LOCAL_RANK               0 .. N-1
  WORLD_SIZE, LOCAL_WORLD_SIZE   N
  MASTER_ADDR                    --master-addr (default 127.0.0.1)
  MASTER_PORT                    --master-port (default: a free TCP port on 127.0.0.1)
Its stdin is /dev/null. Each line a rank writes to stdout (stderr) appears on the launcher's
stdout (stderr) as "[rank R] line"; a last line without newline gets one.

If a rank exits with a non-zero status or is killed by a signal, the launcher prints one line
('clustertwin launch: rank R exited with status S' or '... was killed by signal N (NAME)'),
sends SIGTERM to every rank's process group, SIGKILL after --grace seconds, and exits with
the rank's status (1 for a signal). SIGINT, SIGTERM or SIGHUP to the launcher is forwarded to
every rank the same way (a second one kills at once) and the launcher exits with 128 + the
signal. No rank or process started by a rank outlives the launcher.

With --max-restarts R (the command must have --checkpoint-dir), a failed rank instead stops
the group, the launcher prints 'clustertwin launch: restart K of R: <cause>; relaunching N
ranks with --resume', and starts every rank again with a fresh MASTER_PORT, --resume
appended and CT_LAUNCH_ATTEMPT=K (0 on the first attempt), as torchrun restarts a group;
after R restarts it gives up with the last cause. Exit 0 when every rank
exits 0, 2 on bad flags.

Examples:
  clustertwin launch --nproc 4 -- run nestpipe
  clustertwin launch --nproc 2 --max-restarts 2 -- run nestpipe --checkpoint-dir ck --checkpoint-every 5
  clustertwin launch --nproc 2 --program /bin/sh -- -c 'echo "rank $RANK of $WORLD_SIZE"'
)";

}  // namespace

void add_launch_command(CLI::App& app, Action* action) {
  auto options = std::make_shared<real::LaunchOptions>();
  auto port = std::make_shared<int>(0);
  CLI::App* launch =
      app.add_subcommand("launch", "Start N local ranks of a command, like torchrun, and stop them all when one fails");
  launch->footer(kFooter);
  launch->add_option("--nproc", options->nproc, "Ranks to start on this machine (1..1024)")->required();
  launch->add_option("--master-addr", options->master_addr, "MASTER_ADDR of every rank")
      ->default_str(options->master_addr);
  CLI::Option* port_option =
      launch->add_option("--master-port", *port, "MASTER_PORT of every rank (default: a free port on 127.0.0.1)");
  launch->add_option("--program", options->program,
                     "What each rank runs: a path, or a name found in PATH (default: this clustertwin binary)");
  launch->add_option("--grace", options->grace_s, "Seconds between SIGTERM and SIGKILL when stopping the ranks")
      ->default_str("5");
  launch
      ->add_option("--max-restarts", options->max_restarts,
                   "Restart every rank from the last checkpoint (--resume) up to R times when one fails; needs "
                   "--checkpoint-dir in the command")
      ->default_str("0");
  launch->add_option("ARGS", options->args, "The arguments of every rank, after '--'");
  launch->callback([options, port, port_option, action] {
    *action = [options, port, port_option] {
      if (port_option->count() > 0) options->master_port = *port;
      const StatusOr<int> code = real::launch(*options);
      if (!code.is_ok()) {
        return in_flag_words(code.status(), {{"nproc", "--nproc"},
                                             {"master_addr", "--master-addr"},
                                             {"master_port", "--master-port"},
                                             {"program", "--program"},
                                             {"grace_s", "--grace"},
                                             {"max_restarts", "--max-restarts"}});
      }
      // A rank's own exit status is worth more than the three codes a Status maps to.
      if (*code != 0) std::exit(*code);
      return Status::ok();
    };
  });
}

}  // namespace clustertwin::cli
