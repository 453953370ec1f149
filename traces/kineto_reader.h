#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::traces::kineto {

/// A time in microseconds, split into an exact whole part and a fraction in
/// [0, 1). Kineto times are large (epoch microseconds, ~1.7e12, or a ts
/// relative to baseTimeNanoseconds ~1.7e18): a double holds them only to a
/// quarter of a nanosecond, and the difference of two would keep that error.
struct Micros {
  int64_t whole = 0;
  double frac = 0;

  /// Moves whole microseconds out of `frac` so that it lies in [0, 1).
  void normalise() {
    const double carry = std::floor(frac);
    whole += static_cast<int64_t>(carry);
    frac -= carry;
  }
  bool operator<(const Micros& other) const { return whole != other.whole ? whole < other.whole : frac < other.frac; }
};

/// `to - from` in microseconds.
inline double micros_between(const Micros& from, const Micros& to) {
  return static_cast<double>(to.whole - from.whole) + (to.frac - from.frac);
}

/// `ts` plus `base_ns` nanoseconds (>= 0).
inline Micros with_base(Micros ts, int64_t base_ns) {
  ts.whole += base_ns / 1000;
  ts.frac += static_cast<double>(base_ns % 1000) / 1000.0;
  ts.normalise();
  return ts;
}

/// One element of `traceEvents`, as far as the import reads it.
struct KinetoEvent {
  std::string ph, name, cat;
  bool has_name = false, has_pid = false, has_tid = false, has_ts = false, has_dur = false;
  /// Unset when the value names no device or thread: Kineto's own spans use
  /// "pid": "Spans"; older versions write GPU streams as "tid": "stream 7" (read as 7).
  std::optional<int64_t> pid, tid;
  Micros ts;  // as written, without baseTimeNanoseconds
  double dur = 0;
  std::string dur_text;  // as written, for messages
  // args
  bool has_collective = false;
  std::string collective;                        // "Collective name", as written
  std::string dtype;                             // "dtype"
  std::string name_arg;                          // "name": what a "ph": "M" event names
  std::optional<int64_t> in_nelems, group_size;  // "In msg nelems", "Group size"
  /// c10d's group and point-to-point args (record_param_comms, and the kernels
  /// Kineto copies them onto), each read only when it is an integer >= 0
  /// (older PyTorch writes fewer): "Rank" (a send's destination or a recv's
  /// source as a rank of its group; another collective's own rank), "Dst Rank"
  /// and "Src Rank" (a send's or recv's peer as a global rank), "Global rank
  /// start" and "Global rank stride" (>= 1: the group's global ranks are
  /// start + i x stride), "Process Group Ranks" (a string "[0, 2]": empty
  /// when absent or not a list of integers, as when the profiler truncated it).
  std::optional<int64_t> rank_arg, dst_rank, src_rank, global_rank_start, global_rank_stride;
  std::vector<int64_t> group_ranks;
  std::optional<int64_t> bytes;  // "bytes" of a memcpy or memset
  std::optional<double> flops;   // "flops" (torch.profiler with_flops=True)
  /// "correlation": links a GPU event to the runtime call that launched it
  /// (cudaLaunchKernel, cudaMemcpyAsync, hipLaunchKernel carry the same id).
  std::optional<int64_t> correlation;
  /// "Input Dims" and "Input type" of a CPU operator, first input only: its
  /// element count (the product of its dims; unset when it has none, as a
  /// scalar or a tensor list) and its C++ type ("float", "c10::BFloat16").
  std::optional<int64_t> first_input_nelems;
  std::string first_input_type;
};

/// What the top level of a Kineto file says besides its events.
struct FileHeader {
  std::optional<int64_t> rank, world_size;  // "distributedInfo"
  int64_t base_ns = 0;                      // "baseTimeNanoseconds": newer Kineto writes ts relative to it
  std::string device_name;                  // "deviceProperties"[0]."name"
};

using EventFn = std::function<Status(const KinetoEvent&)>;

/// Streams the Kineto (Chrome trace-event JSON) file at `path`, plain or
/// gzipped, in constant memory: calls `on_event` for each element of
/// `traceEvents` in file order and fills `*header` from the top-level members,
/// which may come before or after the events. Returns the first error: a
/// missing file (NotFound), bad JSON, or a complete event ("ph": "X") with a
/// missing or bad field, named as "FILE: event N: field 'X': problem"; or the
/// first error `on_event` returns. Other events are passed on whatever they
/// hold: a malformed flow or counter is dropped, not reported.
Status read_kineto_file(const std::string& path, FileHeader* header, const EventFn& on_event);

}  // namespace clustertwin::traces::kineto
