// clustertwin plan stub: the stub's planner through the twin interface (cli/twin_command.h).

#include "cli/twin_command.h"

namespace clustertwin::cli {

void add_plan_stub(CLI::App* plan, Action* action) {
  add_plan_twin(plan, action, "stub", "The stub system: the fewest workers that reach a samples/s target");
}

}  // namespace clustertwin::cli
