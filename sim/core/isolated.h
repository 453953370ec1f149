#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace clustertwin::sim {

/// Runs `body` in a forked child process and returns what it returned.
///
/// SimGrid allows one engine per process and keeps global state, so every
/// simulation runs in a child of its own: callers can run any number of
/// simulations, and a crash in one does not take the caller down.
///
/// The child's standard error passes through as it comes, except SimGrid's
/// own log lines ("[time] ./src/...: [category/LEVEL] ..." and the
/// backtraces after them), which are held back: printed after a run that
/// finished, dropped after one that did not. When SimGrid stopped the child
/// (it aborts on a deadlock, a duration that is not finite, "The Impossible
/// Did Happen") the result is one InvalidArgument line quoting SimGrid's
/// first critical message: in practice a rate or a duration of the inputs
/// beyond any machine's. Another signal is an Internal status naming it.
StatusOr<std::string> run_isolated(const std::function<StatusOr<std::string>()>& body);

}  // namespace clustertwin::sim
