// Kineto import in two streaming passes over the inputs, so that memory stays
// constant however large the files are (a Kineto file may hold its
// distributedInfo and baseTimeNanoseconds after traceEvents):
//
//   pass 1 (scan)   each file: header, (pid, tid) streams, thread names,
//                   earliest imported time      -> ranks, streams, time origin
//   pass 2 (write)  each file in rank order: convert and write its events
//                   in the file's own order     -> TraceWriter (atomic)
//
// Choices (see also kineto_names.h for the category mapping):
// - Only GPU kernels become `comm`. The CPU launch of a collective
//   (`record_param_comms`) stays `host` but keeps collective, bytes and group
//   size, so launches can be matched to kernels; `stats.collectives` counts
//   the `comm` events only, so each collective is counted once per rank.
// - Time 0 is the earliest *imported* event of all inputs: flows, instants and
//   dropped runtime calls do not move the origin. An event's absolute time is
//   baseTimeNanoseconds (0 when absent, as in older Kineto) plus its ts.
// - `stats.dropped` counts every event that is neither written nor a "ph": "M"
//   name: flows, instants, counters, runtime calls (unless kept), events whose
//   pid or tid names no device or thread.
// - Thread names come from "thread_name" metadata events; "process_name" is
//   not used, as a rank is the process.
// - The launch link. Pass 1 also keeps, per file, every runtime call with a
//   "correlation" id (cudaLaunchKernel, cudaMemcpyAsync, hipLaunchKernel:
//   its thread, start and duration) and every c10d collective operator on
//   the host ("nccl:all_to_all" with its first input's dims and type, or a
//   record_param_comms with "Collective name"). Pass 2 gives a GPU event
//   with a correlation its launch as host_ts_us / host_dur_us, and a comm
//   kernel that does not say its collective or bytes (older PyTorch; NCCL
//   runs all-to-all, and at scale other collectives, as SendRecv kernels)
//   those of the innermost such operator around its launch.
// - Point-to-point. c10d records a send's destination and a recv's source as
//   "Rank", a rank of its group; newer PyTorch adds the global rank ("Dst
//   Rank", "Src Rank") and the group's global ranks ("Process Group Ranks",
//   "Global rank start" / "stride"). The peer is the global rank, from the
//   kernel's args or else its operator's; a group rank maps through the
//   group, and stays as it is only when the group is the world.

#include "traces/kineto_import.h"

#include <algorithm>
#include <map>

#include "common/version.h"
#include "traces/json_text.h"
#include "traces/kineto_import_internal.h"
#include "traces/kineto_reader.h"
#include "traces/trace_writer.h"

namespace clustertwin::traces {
namespace {

using detail::assign_ranks;
using detail::assign_streams;
using detail::CommOperator;
using detail::convert;
using detail::credit_gradients;
using detail::imported_category;
using detail::Input;
using detail::scan;
using detail::stream_key;
using kineto::FileHeader;
using kineto::KinetoEvent;
using kineto::Micros;

// The imported trace's config, by hand: traces/ has no nlohmann-json (the fuzz build).
std::string config_json(const std::vector<std::string>& paths, const KinetoImportOptions& options) {
  std::string out = "{\"inputs\":[";
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i > 0) out += ",";
    append_json_string(&out, paths[i]);
  }
  out += "],\"keep_runtime_calls\":";
  out += options.keep_runtime_calls ? "true" : "false";
  if (options.rank) {
    out += ",\"rank\":";
    append_json_int(&out, *options.rank);
  }
  return out + "}";
}

// At least one input; --rank only with one input, and not negative.
Status check_import_options(const std::vector<std::string>& inputs, const KinetoImportOptions& options) {
  if (inputs.empty()) return Status::invalid_argument("import-kineto: no input files");
  if (options.rank && inputs.size() != 1) {
    return Status::invalid_argument("option 'rank': " + std::to_string(*options.rank) +
                                    " names the rank of a single input, but " + std::to_string(inputs.size()) +
                                    " inputs were given (" + inputs[0] + ", " + inputs[1] +
                                    (inputs.size() > 2 ? ", ..." : "") + "); their ranks come from distributedInfo");
  }
  if (options.rank && *options.rank < 0) {
    return Status::invalid_argument("option 'rank': " + std::to_string(*options.rank) + " is negative");
  }
  return Status::ok();
}

// Pass 1 over each input (scan): its header, streams, thread names and earliest time; its c10d operators in
// time order, and its gradients credited to the kernels that computed them.
Status scan_inputs(const std::vector<std::string>& inputs, const KinetoImportOptions& options, KinetoImportStats* st,
                   std::vector<Input>* files) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    Input& in = (*files)[i];
    in.path = inputs[i];
    in.position = i;
    CT_RETURN_IF_ERROR(scan(&in, options, st));
    for (auto& [tid, ops] : in.comm_operators) {
      std::stable_sort(ops.begin(), ops.end(),
                       [](const CommOperator& a, const CommOperator& b) { return a.ts < b.ts; });
    }
    credit_gradients(&in);
  }
  return Status::ok();
}

// The earliest first event over the inputs, on their common clock: the imported trace's time 0.
std::optional<Micros> time_origin(const std::vector<Input>& files) {
  std::optional<Micros> origin;
  for (const Input& in : files) {
    if (!in.first_ts) continue;
    const Micros first = with_base(*in.first_ts, in.header.base_ns);
    if (!origin || first < *origin) origin = first;
  }
  return origin;
}

}  // namespace

Status import_kineto(const std::vector<std::string>& inputs, const std::string& output,
                     const KinetoImportOptions& options, KinetoImportStats* stats) {
  KinetoImportStats local;
  KinetoImportStats& st = stats != nullptr ? *stats : local;
  st = KinetoImportStats();
  CT_RETURN_IF_ERROR(check_import_options(inputs, options));
  std::vector<Input> files(inputs.size());
  CT_RETURN_IF_ERROR(scan_inputs(inputs, options, &st, &files));
  Metadata metadata;
  CT_RETURN_IF_ERROR(assign_ranks(&files, options, &metadata.world_size));
  // Output order: by rank, then each file's own order.
  std::sort(files.begin(), files.end(), [](const Input& a, const Input& b) { return a.rank < b.rank; });
  const std::optional<Micros> origin = time_origin(files);
  metadata.source = Source::kImported;
  metadata.system = "imported";
  for (const Input& in : files) {
    if (metadata.hardware.empty()) metadata.hardware = in.header.device_name;
  }
  metadata.config_json = config_json(inputs, options);
  metadata.clustertwin_version = std::string(version());
  metadata.streams = assign_streams(&files);
  st.world_size = metadata.world_size;

  auto writer = TraceWriter::create(output, metadata);
  if (!writer.is_ok()) return writer.status();
  for (const Input& in : files) {
    FileHeader header;  // read again, and ignored: pass 1 has it
    CT_RETURN_IF_ERROR(kineto::read_kineto_file(in.path, &header, [&](const KinetoEvent& e) {
      const std::optional<Category> category = imported_category(e, options);
      if (!category) return Status::ok();
      const auto stream = in.stream_ids.find(stream_key(e));
      if (stream == in.stream_ids.end() || !origin) {
        return Status::internal(in.path + ": event changed between the two passes over the file");
      }
      const Event event = convert(e, *category, in, stream->second, *origin, metadata.world_size);
      if (event.category == Category::kComm && !event.collective.empty()) ++st.collectives;
      (*writer)->write(event);
      return Status::ok();
    }));
  }
  st.events_written = (*writer)->events_written();
  return (*writer)->close();
}

}  // namespace clustertwin::traces
