#pragma once

// What `clustertwin run`'s subcommands share (cli/real_command.cpp), and each
// system's entry (cli/SYSTEM/run.cpp, listed in common/systems.def).

#include "cli/command.h"

namespace clustertwin::cli {

/// --device's and --backend's help, the same for every run subcommand.
extern const char kDeviceHelp[];
extern const char kBackendHelp[];

/// A `run` subcommand's error in its flags' words, for the fields every run's
/// arguments share and real/core names (device, backend, timeout_s, threads,
/// steps: "timeout_s 0: must be > 0" -> "--timeout 0: must be > 0"). A
/// subcommand maps its own fields first (in_flag_words), then these.
Status in_run_flag_words(const Status& status);

/// --checkpoint-dir, --checkpoint-every and --resume into `dir`, `every`
/// and `resume` (real/core/checkpointing.h's CheckpointFlags), the same for
/// every run subcommand. `kind`: what the manifest names the kind of run
/// ("variant", "mode", "framework"); `boundary`: where a checkpoint is taken,
/// for --checkpoint-every's help ("the pipeline drains there").
void add_checkpoint_flags(CLI::App* app, std::string* dir, int* every, bool* resume, const std::string& kind,
                          const std::string& boundary);

#define CT_SYSTEM(name, title) void add_run_##name(CLI::App* run, Action* action);
#include "common/systems.def"
#undef CT_SYSTEM

}  // namespace clustertwin::cli
