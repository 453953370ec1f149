#pragma once

// What the shared-core fit (shared_core_fit.cpp) and the replay (replay.cpp)
// both measure of a twin run: internal to calibrators/.

#include <map>
#include <string>

#include "models/plan/plan.h"
#include "sim/core/simulator.h"

namespace clustertwin::calibrators::detail {

// Per cost key, the mean duration of its tasks in a twin run (each task's mean over ranks and measured
// steps; a key's tasks run equally often).
std::map<std::string, double> twin_key_means(const models::Plan& plan, const sim::SimResult& twin);

}  // namespace clustertwin::calibrators::detail
