// clustertwin run stub: the stub's (absent) real executor.

#include <CLI/CLI.hpp>

#include "cli/run_options.h"
#include "real/stub/stub_command.h"

namespace clustertwin::cli {

void add_run_stub(CLI::App* run, Action* action) {
  CLI::App* cmd = run->add_subcommand("stub", "The stub system: no real executor");
  cmd->callback([action] { *action = [] { return real::stub::run_stub(); }; });
}

}  // namespace clustertwin::cli
