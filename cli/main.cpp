// clustertwin: one command with git-style subcommands (see
// docs/architecture.md and README.md), built as two programs from this file: clustertwin (the twin,
// plan, traces, calibration, the launcher; no libtorch) and clustertwin-torch
// (everything, CT_CLI_WITH_TORCH), which clustertwin executes for the torch
// commands (cli/torch_commands.h). Exit codes: 0 success, 2 bad input, 3 a check asked for failed
// (validate --max-error), 1 internal failure.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "cli/command.h"
#include "common/text.h"
#include "common/version.h"
#if CT_CLI_WITH_TORCH
#include "real/core/backend_info.h"
#endif

namespace {

constexpr char kDescription[] =
    "clustertwin: a simulator and reference executors for cluster-scale ML training systems.\n"
    "Each system (NestPipe, FlexMARL, FlowTrain) has a real executor (libtorch, Gloo or NCCL) and a\n"
    "SimGrid twin driven by traces recorded from real runs; IGSP and SIS run as real kernels.\n"
    "Traces are Chrome trace-event JSON (traces/FORMAT.md) and open in https://ui.perfetto.dev.\n";

#if CT_CLI_WITH_TORCH
std::string version_text() {
  return "clustertwin " + std::string(clustertwin::version()) + " (" +
         clustertwin::real::describe(clustertwin::real::backend_info()) + ")";
}
#endif

}  // namespace

namespace {

// CLI11 reads "-1" into an unsigned option as 2^64 - 1 (strtoull's wrap): a seed or a count given as a negative
// number would run as a huge one. Every unsigned option of every command refuses a minus sign instead.
void reject_negative_unsigned(CLI::App* app) {
  const CLI::Validator non_negative(
      [](std::string& value) -> std::string {
        const size_t first = value.find_first_not_of(" \t");
        return first != std::string::npos && value[first] == '-' ? value + " must be >= 0" : "";
      },
      "");
  for (CLI::Option* option : app->get_options()) {
    if (option->get_type_name() == "UINT") option->check(non_negative);
  }
  for (CLI::App* sub : app->get_subcommands({}))
    reject_negative_unsigned(sub);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(kDescription, "clustertwin");
#if CT_CLI_WITH_TORCH
  app.set_version_flag(
      "--version", [] { return version_text(); }, "Print the version and the libtorch backends, then exit");
#else
  // The libtorch backends are clustertwin-torch's to tell.
  app.set_version_flag(
      "--version",
      [argv] {
        const clustertwin::Status failed = clustertwin::cli::exec_torch_program(argv);
        return "clustertwin " + std::string(clustertwin::version()) + " (" + failed.message() + ")";
      },
      "Print the version and the libtorch backends, then exit");
#endif
  app.require_subcommand(1, 1);
  app.footer("Run 'clustertwin COMMAND --help' for a command's options.");

  clustertwin::cli::Action action;
#if CT_CLI_REAL_ONLY
  // The real side alone (CT_REAL_ONLY): the launcher and the executors.
  clustertwin::cli::add_launch_command(app, &action);
  clustertwin::cli::add_real_command(app, &action);
#else
  clustertwin::cli::add_calibrate_command(app, &action);
  clustertwin::cli::add_launch_command(app, &action);
  clustertwin::cli::add_plan_command(app, &action);
  clustertwin::cli::add_sim_command(app, &action);
  clustertwin::cli::add_trace_command(app, &action);
  clustertwin::cli::add_validate_command(app, &action);
#endif
#if CT_CLI_WITH_TORCH && !CT_CLI_REAL_ONLY
  clustertwin::cli::add_igsp_command(app, &action);
  clustertwin::cli::add_real_command(app, &action);
  clustertwin::cli::add_sis_command(app, &action);
#elif !CT_CLI_WITH_TORCH
  clustertwin::cli::add_torch_forwarders(app, &action, argv);
#endif

  reject_negative_unsigned(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the flag and the value; bad input is exit code 2.
    std::fprintf(stderr, "clustertwin: %s (see 'clustertwin --help')\n", clustertwin::on_one_line(e.what()).c_str());
    return 2;
  }

  try {
    const clustertwin::Status status = action ? action() : clustertwin::Status::internal("no action for the command");
    if (!status.is_ok()) std::fprintf(stderr, "clustertwin: %s\n", clustertwin::on_one_line(status.message()).c_str());
    return status.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clustertwin: internal error: %s\n", e.what());
    return 1;
  }
}
