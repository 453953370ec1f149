// clustertwin trace validate|summary|import-kineto|derive-plan (import-chakra, export-chakra: trace_chakra.cpp)

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "common/file_io.h"
#include "common/text.h"
#include "models/plan/import/kineto_plan.h"
#include "models/plan/plan_json.h"
#include "traces/kineto_import.h"
#include "traces/summary.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"
#include "traces/validator.h"

namespace clustertwin::cli {
namespace {

struct TraceArgs {
  std::string file;
  bool json = false;
  std::string json_out;
  std::vector<std::string> kineto_files;
  int64_t rank = -1;
  bool keep_runtime = false;
  std::string derive_out;
  std::string plan_out;
  double min_wait_us = 1.0;
  bool no_host_tasks = false;
};

Status run_validate(const TraceArgs& args) {
  traces::ValidationStats stats;
  CT_RETURN_IF_ERROR(traces::validate_trace(args.file, &stats));
  std::printf("%s: valid: %lld events on %lld of %d ranks, span %.3f ms (source %s, system %s)\n", args.file.c_str(),
              static_cast<long long>(stats.events), static_cast<long long>(stats.ranks_seen), stats.metadata.world_size,
              stats.span_us / 1000.0, std::string(traces::source_name(stats.metadata.source)).c_str(),
              stats.metadata.system.empty() ? "-" : stats.metadata.system.c_str());
  return Status::ok();
}

Status run_summary(const TraceArgs& args) {
  auto summary = traces::summarize_trace(args.file);
  if (!summary.is_ok()) return summary.status();
  const std::string json = traces::summary_to_json(*summary) + "\n";
  if (!args.json_out.empty()) CT_RETURN_IF_ERROR(write_output(args.json_out, json));
  if (args.json) return write_output("-", json);
  return write_output("-", args.file + "\n" + traces::format_summary(*summary));
}

Status run_import(const TraceArgs& args) {
  if (args.kineto_files.size() < 2) {
    return Status::invalid_argument("trace import-kineto: give at least one input file and the output file");
  }
  std::vector<std::string> inputs(args.kineto_files.begin(), args.kineto_files.end() - 1);
  const std::string& output = args.kineto_files.back();
  // The output is written over atomically: naming an input as the output would replace that input.
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, output, ec)) {
      return Status::invalid_argument("trace import-kineto: output '" + output + "' is the input '" + in +
                                      "'; give a new file for the output");
    }
  }
  traces::KinetoImportOptions options;
  if (args.rank >= 0) options.rank = args.rank;
  options.keep_runtime_calls = args.keep_runtime;
  traces::KinetoImportStats stats;
  CT_RETURN_IF_ERROR(traces::import_kineto(inputs, output, options, &stats));
  std::printf("%s: %lld events from %zu file(s) (%lld collectives, %lld not mapped), world size %d\n", output.c_str(),
              static_cast<long long>(stats.events_written), inputs.size(), static_cast<long long>(stats.collectives),
              static_cast<long long>(stats.dropped), stats.world_size);
  return Status::ok();
}

Status run_derive(const TraceArgs& args) {
  if (!(args.min_wait_us >= 0)) {
    return Status::invalid_argument("--min-wait-us " + format_number("%g", args.min_wait_us) + ": must be >= 0");
  }
  auto trace = traces::read_trace(args.file);
  if (!trace.is_ok()) return trace.status();
  models::DerivePlanOptions options;
  options.min_wait_us = args.min_wait_us;
  options.host_tasks = !args.no_host_tasks;
  auto derived = models::derive_plan(*trace, args.file, options);
  if (!derived.is_ok()) return derived.status();
  if (!args.plan_out.empty()) {
    CT_RETURN_IF_ERROR(write_file_atomically(args.plan_out, models::plan_to_json(derived->plan)));
  }
  CT_RETURN_IF_ERROR(traces::write_trace(args.derive_out, derived->trace));
  for (const std::string& note : derived->notes)
    std::printf("# note: %s\n", note.c_str());
  int deps = 0;
  for (const models::Task& t : derived->plan.tasks)
    deps += static_cast<int>(t.deps.size() + t.prev_step_deps.size());
  std::string from = derived->template_ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < derived->template_ranks.size(); ++i)
    from += (i > 0 ? ", " : "") + std::to_string(derived->template_ranks[i]);
  from += "'s step " + std::to_string(derived->template_step);
  if (derived->template_ranks.size() > 1) from += " (one per group of ranks that run alike)";
  std::printf(
      "%s: a plan of %zu tasks on %zu streams (%d cross-stream dependencies) from %s; %zu events on %d "
      "rank(s) x %d step(s)%s\n",
      args.derive_out.c_str(), derived->plan.tasks.size(), derived->plan.streams.size(), deps, from.c_str(),
      derived->trace.events.size(), derived->trace.metadata.world_size, derived->steps,
      args.plan_out.empty() ? "" : ("; plan in " + args.plan_out).c_str());
  return Status::ok();
}

}  // namespace

void add_trace_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<TraceArgs>();
  CLI::App* trace = app.add_subcommand(
      "trace",
      "Check, summarise and import traces, and derive the step plan an imported one ran (format: traces/FORMAT.md)");
  trace->require_subcommand(1, 1);

  CLI::App* validate = trace->add_subcommand(
      "validate",
      "Check a trace against traces/FORMAT.md; exit 0 if valid, 2 with one line naming the event and field");
  validate->add_option("FILE", args->file, "Trace file (.json or .json.gz)")->required();
  validate->callback([args, action] { *action = [args] { return run_validate(*args); }; });

  CLI::App* summary = trace->add_subcommand(
      "summary",
      "Per cost key: count, total, median, p10, p90; per rank and stream: busy time; per rank: exposed communication");
  summary->add_option("FILE", args->file, "Trace file (.json or .json.gz)")->required();
  summary->add_flag("--json", args->json, "Print JSON instead of the tables");
  summary->add_option("--json-out", args->json_out, "Also write the JSON to this file (atomically)");
  summary->callback([args, action] { *action = [args] { return run_summary(*args); }; });

  CLI::App* kineto = trace->add_subcommand(
      "import-kineto",
      "Convert PyTorch profiler (Kineto) traces, one per rank, into one clustertwin trace: IN [IN ...] OUT");
  kineto->add_option("FILES", args->kineto_files, "Input Kineto traces (.json or .json.gz), then the output file")
      ->required()
      ->expected(2, -1);
  kineto->add_option("--rank", args->rank, "Rank of a single input (default: its distributedInfo.rank, else 0)")
      ->check(CLI::NonNegativeNumber);
  kineto->add_flag("--keep-runtime", args->keep_runtime, "Keep CUDA runtime/driver API calls as host events");
  kineto->callback([args, action] { *action = [args] { return run_import(*args); }; });

  CLI::App* derive = trace->add_subcommand(
      "derive-plan",
      "Derive the step plan an imported trace (import-kineto) ran, so that calibrate can fit its costs and the "
      "twin can run it at other worker counts: the device events of a profiler step become tasks on their "
      "streams, a task waits for another stream's where its stream sat idle until that one ended, every rank and "
      "step must repeat it; in a pipeline (sends and recvs), each group of ranks whose steps run alike gets its "
      "own tasks, and every send must meet its recv on the peer (models/plan/import/kineto_plan.h). Writes the "
      "trace again with each event's step and task and the plan in its metadata");
  derive->add_option("TRACE", args->file, "An imported trace (clustertwin trace import-kineto)")->required();
  derive->add_option("-o,--out", args->derive_out, "The trace with its plan, to write")->required();
  derive->add_option("--plan", args->plan_out, "Also write the plan alone (for clustertwin sim plan)");
  derive
      ->add_option("--min-wait-us", args->min_wait_us,
                   "Idle time on a stream, in us, above which its next task waited for another stream")
      ->capture_default_str();
  derive->add_flag("--no-host-tasks", args->no_host_tasks,
                   "Model the device timeline alone: no host tasks where the device waited for a launch");
  derive->callback([args, action] { *action = [args] { return run_derive(*args); }; });

  add_trace_chakra_commands(*trace, action);
}

}  // namespace clustertwin::cli
