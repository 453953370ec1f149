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
#include <set>
#include <tuple>

#include "common/version.h"
#include "traces/json_text.h"
#include "traces/kineto_names.h"
#include "traces/kineto_reader.h"
#include "traces/trace_writer.h"

namespace clustertwin::traces {
namespace {

using kineto::EventFn;
using kineto::FileHeader;
using kineto::KinetoEvent;
using kineto::Micros;

// A (pid, tid) of one rank. GPU streams sort before CPU threads.
struct StreamKey {
  int kind = 0;     // 0: GPU (pid = device, tid = CUDA stream); 1: CPU (pid = process, tid = thread)
  int64_t pid = 0;  // device or process
  int64_t tid = 0;  // stream or thread
  auto operator<=>(const StreamKey&) const = default;
};

// The category of a complete event we import, or nothing for the rest.
std::optional<Category> imported_category(const KinetoEvent& e, const KinetoImportOptions& options) {
  if (e.ph != "X" || !e.pid || !e.tid) return std::nullopt;
  return kineto::category_for(e.cat, e.name, e.has_collective, options.keep_runtime_calls);
}

StreamKey stream_key(const KinetoEvent& e) {
  return {kineto::is_gpu_category(e.cat) ? 0 : 1, *e.pid, *e.tid};
}

// A runtime call that launched GPU work, by its correlation id.
struct Launch {
  int64_t tid = 0;
  Micros ts;
  double dur = 0;
};

// Where a collective's group and a send's or recv's peer lie, as c10d's args say (kineto_reader.h).
struct GroupArgs {
  std::optional<int64_t> rank, dst, src, start, stride, size;
  std::vector<int64_t> ranks;

  static GroupArgs of(const KinetoEvent& e) {
    return {e.rank_arg, e.dst_rank, e.src_rank, e.global_rank_start, e.global_rank_stride, e.group_size, e.group_ranks};
  }
  // The group's global ranks as start + i x stride: from its rank list when that is evenly spaced, else from
  // "Global rank start" and "Global rank stride".
  std::optional<std::pair<int64_t, int64_t>> layout() const {
    if (ranks.size() >= 2) {
      const int64_t stride = ranks[1] - ranks[0];
      for (size_t i = 1; i < ranks.size(); ++i) {
        if (stride < 1 || ranks[i] - ranks[i - 1] != stride) return std::nullopt;
      }
      return std::pair(ranks[0], stride);
    }
    if (start && stride) return std::pair(*start, *stride);
    return std::nullopt;
  }
  // The global rank of a send's destination or a recv's source: "Dst Rank" / "Src Rank", else "Rank" (a rank
  // of the group) through the group's layout, or as it is when the group is the whole world.
  std::optional<int64_t> peer(const std::string& collective, int64_t world_size) const {
    if (collective == "send" && dst) return dst;
    if (collective == "recv" && src) return src;
    if (!rank) return std::nullopt;
    if (static_cast<size_t>(*rank) < ranks.size()) return ranks[static_cast<size_t>(*rank)];
    if (const auto l = layout()) return l->first + *rank * l->second;
    if (!size || *size == world_size) return rank;
    return std::nullopt;
  }
};

// A c10d collective operator on a host thread.
struct CommOperator {
  Micros ts;
  double dur = 0;
  std::string collective;
  std::optional<int64_t> bytes, group_size;
  GroupArgs group;
};

// `nelems` elements of `element_bytes` each, when both are known.
std::optional<int64_t> bytes_of(std::optional<int64_t> nelems, std::optional<int64_t> element_bytes) {
  if (!nelems || !element_bytes) return std::nullopt;
  return *nelems * *element_bytes;
}

// A CPU operator's first input, in bytes ("Input Dims" x "Input type").
std::optional<int64_t> first_input_bytes(const KinetoEvent& e) {
  return bytes_of(e.first_input_nelems, kineto::cpp_type_bytes(e.first_input_type));
}

// A collective's message as c10d records it ("In msg nelems" x "dtype").
std::optional<int64_t> message_bytes(const KinetoEvent& e) {
  return bytes_of(e.in_nelems, kineto::dtype_bytes(e.dtype));
}

// The collective and bytes a host operator says, if it is a c10d collective.
std::optional<CommOperator> comm_operator(const KinetoEvent& e) {
  if (kineto::is_gpu_category(e.cat) || e.ph != "X") return std::nullopt;
  CommOperator op;
  op.ts = e.ts;
  op.dur = e.dur;
  op.group_size = e.group_size;
  op.group = GroupArgs::of(e);
  op.collective = kineto::collective_of_operator(e.name);
  if (!op.collective.empty()) {
    op.bytes = first_input_bytes(e);
    return op;
  }
  if (e.has_collective) {
    op.collective = kineto::normalise_collective(e.collective);
    op.bytes = message_bytes(e);
    return op;
  }
  return std::nullopt;
}

// What the first pass learns of one input.
struct Input {
  std::string path;
  size_t position = 0;  // in the caller's list
  FileHeader header;
  int64_t rank = 0;
  std::optional<Micros> first_ts;  // earliest imported event, without the base
  std::set<StreamKey> streams;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;              // "ph": "M" thread_name
  std::map<StreamKey, int64_t> stream_ids;                                      // our tid
  std::map<int64_t, Launch> launches;                                           // correlation -> runtime call
  std::map<int64_t, std::vector<CommOperator>> comm_operators;                  // host thread -> by start
  std::map<int64_t, std::vector<std::pair<Micros, int64_t>>> accumulate_grads;  // host thread -> (start, bytes)
  std::map<int64_t, int64_t> grad_bytes;  // correlation -> gradient bytes its GPU work completed

  // The launch of a GPU event, if the file has it.
  const Launch* launch_of(const KinetoEvent& e) const {
    if (!e.correlation || !kineto::is_gpu_category(e.cat)) return nullptr;
    auto it = launches.find(*e.correlation);
    return it == launches.end() ? nullptr : &it->second;
  }
  // The innermost c10d collective operator around `launch` on its thread; one with bytes first.
  const CommOperator* operator_around(const Launch& launch) const {
    auto ops = comm_operators.find(launch.tid);
    if (ops == comm_operators.end()) return nullptr;
    const CommOperator* best = nullptr;
    for (const CommOperator& op : ops->second) {
      if (launch.ts < op.ts) break;
      if (micros_between(op.ts, launch.ts) > op.dur) continue;      // ended before the launch
      if (best == nullptr || !best->bytes || op.bytes) best = &op;  // later starts are nested deeper
    }
    return best;
  }
};

// Pass 1: header, streams, thread names and the earliest time of one file.
Status scan(Input* in, const KinetoImportOptions& options, KinetoImportStats* stats) {
  return kineto::read_kineto_file(in->path, &in->header, [&](const KinetoEvent& e) {
    ++stats->events_read;
    if (e.ph == "M") {
      if (e.name == "thread_name" && e.pid && e.tid && !kineto::trim(e.name_arg).empty()) {
        in->thread_names[{*e.pid, *e.tid}] = std::string(kineto::trim(e.name_arg));
      }
      return Status::ok();
    }
    if (e.ph == "X" && e.tid && e.correlation && (e.cat == "cuda_runtime" || e.cat == "cuda_driver")) {
      in->launches[*e.correlation] = Launch{*e.tid, e.ts, e.dur};
    }
    if (e.tid) {
      if (auto op = comm_operator(e)) in->comm_operators[*e.tid].push_back(std::move(*op));
      if (e.ph == "X" && e.name == "torch::autograd::AccumulateGrad") {
        if (auto bytes = first_input_bytes(e)) in->accumulate_grads[*e.tid].emplace_back(e.ts, *bytes);
      }
    }
    if (!imported_category(e, options)) {
      ++stats->dropped;  // flows, instants, counters, runtime calls, profiler spans
      return Status::ok();
    }
    in->streams.insert(stream_key(e));
    if (!in->first_ts || e.ts < *in->first_ts) in->first_ts = e.ts;
    return Status::ok();
  });
}

// Each AccumulateGrad's gradient goes to the last GPU work its thread launched before it: the kernel that
// computed the gradient (with zero_grad(set_to_none=True) AccumulateGrad launches nothing itself).
void credit_gradients(Input* in) {
  std::map<int64_t, std::vector<std::pair<Micros, int64_t>>> by_thread;  // tid -> (launch start, correlation)
  for (const auto& [correlation, launch] : in->launches)
    by_thread[launch.tid].emplace_back(launch.ts, correlation);
  for (auto& [tid, list] : by_thread) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  for (const auto& [tid, grads] : in->accumulate_grads) {
    auto launched = by_thread.find(tid);
    if (launched == by_thread.end()) continue;
    const auto& list = launched->second;
    for (const auto& [ts, bytes] : grads) {
      auto after = std::upper_bound(list.begin(), list.end(), ts,
                                    [](const Micros& t, const std::pair<Micros, int64_t>& l) { return t < l.first; });
      if (after == list.begin()) continue;  // nothing launched before it on its thread
      in->grad_bytes[std::prev(after)->second] += bytes;
    }
  }
}

// Ranks from --rank, distributedInfo.rank or the position; no two alike.
Status assign_ranks(std::vector<Input>* inputs, const KinetoImportOptions& options, int* world_size) {
  std::map<int64_t, const Input*> owner;
  int64_t size = 1;
  for (Input& in : *inputs) {
    in.rank = options.rank ? *options.rank : in.header.rank ? *in.header.rank : static_cast<int64_t>(in.position);
    if (in.rank >= (1 << 24)) {
      return Status::invalid_argument(in.path + ": rank " + std::to_string(in.rank) +
                                      " is out of range (0 to 16777215)");
    }
    auto [it, inserted] = owner.emplace(in.rank, &in);
    if (!inserted) {
      return Status::invalid_argument(in.path + ": rank " + std::to_string(in.rank) + " is also claimed by " +
                                      it->second->path +
                                      " (a rank comes from --rank, else distributedInfo.rank, else the input's "
                                      "position); give one file per rank");
    }
    if (in.header.world_size.value_or(1) > (1 << 24)) {
      return Status::invalid_argument(in.path + ": top level: field 'distributedInfo.world_size': " +
                                      std::to_string(*in.header.world_size) + " is out of range (1 to 16777216)");
    }
    size = std::max({size, in.rank + 1, in.header.world_size.value_or(1)});
  }
  *world_size = static_cast<int>(size);
  return Status::ok();
}

// Our streams: one per (pid, tid) of a rank, named after it. Ranks share a
// stream when their names agree ("stream 7" on every GPU), so the list is the
// union of names in the order GPU (device, stream), then CPU (pid, tid).
std::vector<std::string> assign_streams(std::vector<Input>* inputs) {
  std::vector<std::tuple<StreamKey, size_t, std::string>> all;  // key, index in *inputs, name
  for (size_t i = 0; i < inputs->size(); ++i) {
    Input& in = (*inputs)[i];
    std::set<std::string> used;  // two threads of one rank never share a stream
    for (const StreamKey& key : in.streams) {
      const std::string generated =
          key.kind == 0 ? kineto::gpu_stream_name(key.pid, key.tid) : kineto::cpu_thread_name(key.tid);
      auto named = in.thread_names.find({key.pid, key.tid});
      std::string name = named != in.thread_names.end() ? named->second : generated;
      if (used.count(name) > 0) name = generated;
      for (int n = 2; used.count(name) > 0; ++n) {
        name = generated + " #" + std::to_string(n);
      }
      used.insert(name);
      all.emplace_back(key, i, name);
    }
  }
  std::sort(all.begin(), all.end());
  std::vector<std::string> names;
  std::map<std::string, int64_t> ids;
  for (const auto& [key, i, name] : all) {
    auto [it, inserted] = ids.emplace(name, static_cast<int64_t>(names.size()));
    if (inserted) names.push_back(name);
    (*inputs)[i].stream_ids[key] = it->second;
  }
  return names;
}

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

Event convert(const KinetoEvent& e, Category category, const Input& in, int64_t stream, const Micros& origin,
              int64_t world_size) {
  Event out;
  out.name = e.name;
  out.category = category;
  out.rank = in.rank;
  out.stream = stream;
  out.ts_us = micros_between(origin, with_base(e.ts, in.header.base_ns));
  out.dur_us = e.dur;
  out.cost_key = kineto::cost_key_for(e.name);
  if (e.has_collective) {
    out.collective = kineto::normalise_collective(e.collective);
  } else if (category == Category::kComm) {
    out.collective = kineto::collective_from_kernel(e.name);
  }
  if (const std::optional<int64_t> message = message_bytes(e)) {
    out.bytes = message;
  } else if (category == Category::kCopy) {
    out.bytes = e.bytes;
  }
  out.group_size = e.group_size;
  out.flops = e.flops;
  GroupArgs group = GroupArgs::of(e);
  if (const Launch* launch = in.launch_of(e)) {
    // A launch before the origin (the earliest imported event) cannot be placed on the trace's axis.
    const double launched = micros_between(origin, with_base(launch->ts, in.header.base_ns));
    if (launched >= 0) {
      out.host_ts_us = launched;
      out.host_dur_us = launch->dur;
    }
    auto grads = in.grad_bytes.find(*e.correlation);
    if (grads != in.grad_bytes.end()) out.grad_bytes = grads->second;
    const bool known = out.collective != "sendrecv" && !out.collective.empty() && out.bytes;
    if (category == Category::kComm && !known) {
      if (const CommOperator* op = in.operator_around(*launch)) {
        out.collective = op->collective;
        if (op->bytes) out.bytes = op->bytes;
        if (op->group_size) out.group_size = op->group_size;
      }
    }
    // A kernel without c10d's group args (older PyTorch copies none onto kernels) takes its operator's.
    const bool has_group = group.rank || group.dst || group.src || !group.ranks.empty() || group.start;
    if (category == Category::kComm && !has_group) {
      if (const CommOperator* op = in.operator_around(*launch)) group = op->group;
    }
  }
  if (category == Category::kComm) {
    if (out.collective == "send" || out.collective == "recv") {
      out.peer = group.peer(out.collective, world_size);
    } else if (const auto layout = group.layout()) {
      out.group_start = layout->first;
      out.group_stride = layout->second;
    }
  }
  return out;
}

}  // namespace

Status import_kineto(const std::vector<std::string>& inputs, const std::string& output,
                     const KinetoImportOptions& options, KinetoImportStats* stats) {
  KinetoImportStats local;
  KinetoImportStats& st = stats != nullptr ? *stats : local;
  st = KinetoImportStats();
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

  std::vector<Input> files(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    files[i].path = inputs[i];
    files[i].position = i;
    CT_RETURN_IF_ERROR(scan(&files[i], options, &st));
    for (auto& [tid, ops] : files[i].comm_operators) {
      std::stable_sort(ops.begin(), ops.end(),
                       [](const CommOperator& a, const CommOperator& b) { return a.ts < b.ts; });
    }
    credit_gradients(&files[i]);
  }
  Metadata metadata;
  CT_RETURN_IF_ERROR(assign_ranks(&files, options, &metadata.world_size));
  // Output order: by rank, then each file's own order.
  std::sort(files.begin(), files.end(), [](const Input& a, const Input& b) { return a.rank < b.rank; });
  std::optional<Micros> origin;
  for (const Input& in : files) {
    if (!in.first_ts) continue;
    const Micros first = with_base(*in.first_ts, in.header.base_ns);
    if (!origin || first < *origin) origin = first;
  }
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
