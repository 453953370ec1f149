#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustertwin::traces {

/// What a traced interval was spent on. The set is fixed (traces/FORMAT.md).
enum class Category { kCompute, kComm, kCopy, kLookup, kHost, kIdle };

inline constexpr Category kAllCategories[] = {Category::kCompute, Category::kComm, Category::kCopy,
                                              Category::kLookup,  Category::kHost, Category::kIdle};

/// "compute", "comm", ...
std::string_view category_name(Category category);
/// The category called `name`, or nothing when the name is not in the fixed set.
std::optional<Category> category_from_name(std::string_view name);
/// "compute, comm, copy, lookup, host, idle", for error messages.
std::string category_list();

/// Where a trace came from.
enum class Source { kReal, kSim, kImported };
std::string_view source_name(Source source);
std::optional<Source> source_from_name(std::string_view name);

/// The current format version; readers accept this version only.
inline constexpr int kFormatVersion = 1;

/// The trace's metadata object: what ran, where, and how.
struct Metadata {
  int format_version = kFormatVersion;
  Source source = Source::kReal;
  std::string system;   // "nestpipe", "flexmarl", "flowtrain", "collectives", ... ("" if unknown)
  std::string variant;  // "torchrec", "dbp", ... ("" if none)
  int world_size = 1;
  std::string hardware;            // hardware or platform name
  std::string model;               // model spec name
  std::string config_json = "{}";  // the run's configuration, a JSON object in compact form
  std::optional<uint64_t> seed;
  std::string clustertwin_version;
  std::vector<std::string> streams;  // stream names indexed by tid ("compute", "comm", ...)

  bool operator==(const Metadata&) const = default;
};

/// One complete event ("ph": "X"): an interval a rank's stream spent on one task.
struct Event {
  std::string name;
  Category category = Category::kCompute;
  int64_t rank = 0;    // "pid"
  int64_t stream = 0;  // "tid"
  double ts_us = 0;    // start, microseconds from the trace's origin
  double dur_us = 0;   // duration, microseconds, >= 0

  // "args": each present only where it applies.
  std::optional<int64_t> task_id;  // plan task id
  std::string cost_key;            // "" when none
  std::optional<int64_t> step;
  std::optional<int64_t> micro_batch;
  std::optional<int64_t> bytes;
  std::optional<double> flops;
  std::string collective;  // "allreduce", "alltoall", ... ("" when none)
  std::optional<int64_t> group_size;
  // A collective's group as global ranks group_start + i x group_stride,
  // i < group_size, where the trace says (imported c10d args); unset: unknown.
  std::optional<int64_t> group_start, group_stride;
  std::optional<int64_t> peer;   // a send's destination or a recv's source (global rank)
  std::optional<double> cpu_us;  // CPU time the recording thread spent in the task (real runs), microseconds
  // Real runs on a GPU, where ts/dur are the device's (CUDA events): when the
  // host thread launched the task's work and how long the launch took.
  std::optional<double> host_ts_us;
  std::optional<double> host_dur_us;
  // Imported training traces: bytes of parameter gradients this task
  // completed (torch.autograd.AccumulateGrad after its launch).
  std::optional<int64_t> grad_bytes;

  double end_us() const { return ts_us + dur_us; }
  /// When the host finished launching the task's work, where the trace links it to a launch.
  std::optional<double> launch_end_us() const {
    if (!host_ts_us) return std::nullopt;
    return *host_ts_us + host_dur_us.value_or(0);
  }
  bool operator==(const Event&) const = default;
};

/// A whole trace in memory. Large traces should be streamed with TraceReader instead.
struct Trace {
  Metadata metadata;
  std::vector<Event> events;
};

}  // namespace clustertwin::traces
