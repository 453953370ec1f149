// clustertwin trace validate|summary|import-kineto

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "traces/kineto_import.h"
#include "traces/summary.h"
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

}  // namespace

void add_trace_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<TraceArgs>();
  CLI::App* trace = app.add_subcommand("trace", "Check, summarise and import traces (format: traces/FORMAT.md)");
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
}

}  // namespace clustertwin::cli
