#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/status.h"

namespace CLI {
class App;
}

namespace clustertwin::cli {

/// What a subcommand does once its arguments are parsed. Subcommands only
/// parse arguments and call the libraries; errors come back as a Status and
/// `main` turns them into one line on stderr and the exit code (0 ok, 2 bad
/// input, 3 a failed check, 1 internal failure).
using Action = std::function<Status()>;

/// Registers `clustertwin trace ...` on `app`; the chosen action is stored in `*action`.
void add_trace_command(CLI::App& app, Action* action);
/// Registers `trace import-chakra` and `trace export-chakra` on the `trace` subcommand (cli/trace_chakra.cpp).
void add_trace_chakra_commands(CLI::App& trace, Action* action);

/// Registers `clustertwin run ...` (the real executor) on `app`.
void add_real_command(CLI::App& app, Action* action);

/// Registers `clustertwin launch ...` (local ranks with the torchrun variables) on `app`.
void add_launch_command(CLI::App& app, Action* action);

/// Registers `clustertwin sim ...` on `app`.
void add_sim_command(CLI::App& app, Action* action);

/// Registers `clustertwin sim mix` (several jobs on one cluster) on the `sim` subcommand.
void add_sim_mix_command(CLI::App& sim, Action* action);

/// Registers `clustertwin sim sweep` (mixes x placements x seeds, in shards)
/// and `clustertwin sim sweep-merge` (the shards' point files as one table).
void add_sim_sweep_commands(CLI::App& sim, Action* action);

/// Registers `clustertwin sim SYSTEM` on the `sim` subcommand, one per
/// system of common/systems.def (cli/SYSTEM/sim.cpp).
#define CT_SYSTEM(name, title) void add_sim_##name##_command(CLI::App& sim, Action* action);
#include "common/systems.def"
#undef CT_SYSTEM

/// The registry's systems, comma-separated ("nestpipe, flexmarl, flowtrain"): for help texts.
std::string system_names();

/// Registers `clustertwin plan ...` (capacity planning with the twin) on `app`.
void add_plan_command(CLI::App& app, Action* action);

/// "128,256,512" -> {128, 256, 512}; InvalidArgument naming --workers and the bad item.
StatusOr<std::vector<int>> parse_workers(const std::string& text);

/// Registers `clustertwin igsp ...` (the IGSP study) on `app`.
void add_igsp_command(CLI::App& app, Action* action);

/// Registers `clustertwin sis study|stability` (SIS's studies) on `app`.
void add_sis_command(CLI::App& app, Action* action);

/// Registers `clustertwin calibrate ...` (fit a profile to recorded traces) on `app`.
void add_calibrate_command(CLI::App& app, Action* action);
/// `calibrate steps` (cli/calibrate_steps.cpp), a subcommand of `calibrate`; returns it.
CLI::App* add_calibrate_steps(CLI::App* calibrate, Action* action);

/// Registers `clustertwin validate ...` (replay a recorded run in the twin) on `app`.
void add_validate_command(CLI::App& app, Action* action);

/// Registers eval, igsp, prune, run and sis as commands that execute
/// clustertwin-torch with `argv` (cli/torch_commands.h); for the clustertwin
/// program, which does not load libtorch.
void add_torch_forwarders(CLI::App& app, Action* action, char** argv);
/// Executes clustertwin-torch (beside this program, or $CT_TORCH_PROGRAM)
/// with `argv`; returns only when that fails, with the reason.
Status exec_torch_program(char** argv);

/// Writes `text` to `path` atomically, or to stdout when `path` is "-".
Status write_output(const std::string& path, const std::string& text);

/// A library's error in the command line's words: a message that starts
/// with one of `fields` (a config field, then a space and its value or a
/// colon: "workers 8: too few ...") starts with its flag instead ("--workers
/// 8: too few ...").
/// Libraries name their fields; the command maps them to its flags.
Status in_flag_words(const Status& status, std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

/// A twin run's step counts and size (sim::SimOptions: steps, warmup_steps,
/// drain_steps, workers) in the words of the commands that set them
/// (--steps, --warmup, --drain, --workers).
Status in_sim_option_words(const Status& status);

}  // namespace clustertwin::cli
