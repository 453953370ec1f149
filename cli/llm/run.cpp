// clustertwin run llm: the LLM workload has no real executor here; the command says so.

#include <CLI/CLI.hpp>

#include "cli/run_options.h"

namespace clustertwin::cli {

void add_run_llm(CLI::App* run, Action* action) {
  CLI::App* cmd = run->add_subcommand(
      "llm",
      "Dense transformer training: no real executor (the twin is checked against published measurements, "
      "experiments/llm/README.md); refused");
  cmd->callback([action] {
    *action = [] {
      return Status::invalid_argument(
          "run llm: the LLM workload has no real executor; simulate it with `clustertwin sim llm`");
    };
  });
}

}  // namespace clustertwin::cli
