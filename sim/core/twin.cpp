#include "sim/core/twin.h"

namespace clustertwin::sim {

std::string JobFrame::where(std::string_view key) const {
  return file + ": field '" + field + "." + std::string(key) + "': ";
}

std::string JobFrame::job() const {
  return file + ": " + field + " ('" + name + "')";
}

SimOptions JobFrame::apply(SimOptions options) const {
  options.workers = workers;
  options.seed = seed;
  if (steps > 0) options.steps = steps;
  if (warmup >= 0) options.warmup_steps = warmup;
  if (drain >= 0) options.drain_steps = drain;
  if (shared_fabric) options.collective_shortcut = false;
  return options;
}

}  // namespace clustertwin::sim
