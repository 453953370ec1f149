#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace clustertwin::sim {

/// Runs `body` in a forked child process and returns what it returned.
///
/// SimGrid allows one engine per process and keeps global state, so every
/// simulation runs in a child of its own: callers can run any number of
/// simulations, and a crash in one (SimGrid aborts on a deadlock) comes back
/// as an Internal status naming the signal instead of taking the caller down.
StatusOr<std::string> run_isolated(const std::function<StatusOr<std::string>()>& body);

}  // namespace clustertwin::sim
