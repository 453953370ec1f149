#pragma once

#include <string>
#include <vector>

namespace clustertwin::testing {

/// What a finished command printed and how it exited.
struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

/// Runs `argv` (argv[0] a path) without a shell and waits for it.
CommandResult run_command(const std::vector<std::string>& argv);

/// Runs the clustertwin binary under test (CT_CLI_PATH) with `args`.
CommandResult run_clustertwin(const std::vector<std::string>& args);

}  // namespace clustertwin::testing
