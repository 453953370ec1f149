#pragma once

// What `clustertwin run`'s subcommands share (cli/real_command.cpp), and each
// system's entry (cli/SYSTEM/run.cpp, listed in common/systems.def).

#include "cli/command.h"

namespace clustertwin::cli {

/// --device's and --backend's help, the same for every run subcommand.
extern const char kDeviceHelp[];
extern const char kBackendHelp[];

#define CT_SYSTEM(name, title) void add_run_##name(CLI::App* run, Action* action);
#include "common/systems.def"
#undef CT_SYSTEM

}  // namespace clustertwin::cli
