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

/// Writes `text` to `name` in the test's temporary folder; returns the path.
std::string write_temp(const std::string& name, const std::string& text);

/// Expects exit code 2 and one line on stderr that contains `part`.
void expect_one_line_exit_2(const CommandResult& r, const std::string& part);

}  // namespace clustertwin::testing
