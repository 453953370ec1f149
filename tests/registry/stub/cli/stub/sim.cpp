// clustertwin sim stub: the stub's twin through the twin interface (cli/twin_command.h).

#include "cli/twin_command.h"

namespace clustertwin::cli {

void add_sim_stub_command(CLI::App& sim, Action* action) {
  add_sim_twin_command(sim, action, "stub", "The stub system's twin: compute, then an all-reduce, per step");
}

}  // namespace clustertwin::cli
