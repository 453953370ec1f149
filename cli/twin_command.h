#pragma once

// `clustertwin sim SYSTEM` and `clustertwin plan SYSTEM` for any twin of the
// registry, through the twin interface (sim/core/twin.h) alone: the twin's
// own settings as `--set KEY=VALUE` (the keys a mix job's entry takes), a
// job sized by --workers on --platform, run alone. A system whose twin needs
// no command of its own registers these two (cli/SYSTEM/sim.cpp,
// plan.cpp) and names nothing else.

#include <string>

#include "cli/command.h"

namespace clustertwin::cli {

/// Registers `clustertwin sim SYSTEM`: a job of the registry's twin `system`
/// alone at each count of --workers; a table of step times, or --json.
void add_sim_twin_command(CLI::App& sim, Action* action, const std::string& system, const std::string& help);

/// Registers `clustertwin plan SYSTEM`: the fewest workers (whole nodes) at
/// which a job of the twin reaches --target-throughput, in samples/s when
/// the twin's batch is per worker, else steps/s.
void add_plan_twin(CLI::App* plan, Action* action, const std::string& system, const std::string& help);

}  // namespace clustertwin::cli
