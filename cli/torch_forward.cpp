// clustertwin's torch commands, forwarded to clustertwin-torch (see
// cli/torch_commands.h): the same arguments, the same process (exec), so
// exit codes, signals and the launcher's process tree are what they were.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/command.h"
#include "cli/torch_commands.h"

namespace clustertwin::cli {

std::string torch_program() {
  if (const char* path = std::getenv("CT_TORCH_PROGRAM"); path != nullptr && *path != '\0') return path;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
  const size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  return dir + "/" + kTorchProgramName;
}

Status exec_torch_program(char** argv) {
  const std::string program = torch_program();
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(program.c_str(), argv);
  return Status::internal("cannot run " + program + " (" + std::strerror(errno) +
                          "): the commands eval, igsp, prune, run and sis need it installed beside clustertwin");
}

void add_torch_forwarders(CLI::App& app, Action* action, char** argv) {
  for (const TorchCommand& c : kTorchCommands) {
    CLI::App* cmd = app.add_subcommand(c.name, c.description);
    cmd->prefix_command();  // everything after the name goes on untouched, --help included
    cmd->set_help_flag();
    cmd->callback([action, argv] { *action = [argv] { return exec_torch_program(argv); }; });
  }
}

}  // namespace clustertwin::cli
