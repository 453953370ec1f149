#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "traces/event.h"

namespace clustertwin::real {

class Communicator;
struct Group;

/// The metadata of a real run's trace: source real, this world, the device
/// as hardware ("cpu", or "cuda:0 (NVIDIA H200, 139.8 GiB)"), the library version.
traces::Metadata real_run_metadata(const Communicator& comm, const std::string& system, const std::string& variant,
                                   const std::string& config_json, uint64_t seed);

/// Records the tasks one rank runs, as trace events (traces/FORMAT.md).
///
/// Times are steady-clock microseconds from the origin, which every rank sets
/// right after a start-up barrier (`start`), so that the merged trace of all
/// ranks shares one time axis. Recording costs two clock reads and one
/// append under a mutex; `experiments/bench/tracer_bench.cpp` measures it.
class Tracer {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Tracer(int rank, size_t reserve = 1 << 16);

  /// Sets time zero to now; call right after a barrier on every rank.
  void start() { origin_ = Clock::now(); }
  double now_us() const { return std::chrono::duration<double, std::micro>(Clock::now() - origin_).count(); }
  /// The CPU time the calling thread has used so far, microseconds (its
  /// thread CPU clock): the difference over a task is the work it did, without
  /// the time it waited for a core or a peer.
  static double thread_cpu_us();

  /// Adds an event (its rank is set to this tracer's); thread-safe.
  void record(traces::Event event);
  size_t size() const;
  /// Drops the events recorded so far (keeps the origin).
  void clear();
  /// The events so far, in recording order.
  std::vector<traces::Event> events() const;

  /// Gathers every rank's events at rank 0 through `world` and, on rank 0,
  /// writes them with `metadata` to `path` (atomically). Collective: every
  /// rank calls it.
  Status gather_and_write(Communicator& comm, Group& world, const traces::Metadata& metadata,
                          const std::string& path) const;

 private:
  int rank_;
  Clock::time_point origin_ = Clock::now();
  mutable std::mutex mutex_;
  std::vector<traces::Event> events_;
};

}  // namespace clustertwin::real
