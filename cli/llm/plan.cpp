// clustertwin plan llm: placeholder through the twin interface (replaced by the split search).

#include "cli/twin_command.h"

namespace clustertwin::cli {

void add_plan_llm(CLI::App* plan, Action* action) {
  add_plan_twin(plan, action, "llm", "Dense transformer training: the fewest workers for a steps/s target");
}

}  // namespace clustertwin::cli
