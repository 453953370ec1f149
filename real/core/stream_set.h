#pragma once

// The device side of PlanRunner's streams (plan_runner.h). On the CPU a plan
// stream is its thread and nothing more. On a GPU each plan stream also owns
// a CUDA stream: its thread queues its tasks' kernels there, a dependency on
// a task of another stream becomes a CUDA event that the stream waits for
// (the host thread has already seen the task finish launching, the device may
// not have run it yet), and each task's start and end are CUDA events, so the
// trace shows when the device ran the task rather than when the host queued it:
//
//   host   comm thread  |launch a2a|                  (returns at once)
//   device comm stream        |====== a2a ======|ev
//   device compute stream         waits for ev ->|== fwd ==|
//
// Only c10's Device here; the CUDA implementation (stream_set_cuda.cpp) is
// built against a CUDA-enabled libtorch alone (CT_HAVE_CUDA_TORCH).

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <utility>

namespace clustertwin::real {

class StreamSet {
 public:
  virtual ~StreamSet() = default;

  /// Whether the device keeps its own time (a GPU): then times_us() gives
  /// each task's device interval. False on the CPU, where the host's clock
  /// around a task's body is its interval.
  virtual bool timed() const = 0;

  /// On every rank, right after the tracer's origin is set: waits for the
  /// device and marks its time zero, read with `now_us` on the host clock.
  virtual void mark_origin(const std::function<double()>& now_us) = 0;

  /// On the thread of plan stream `stream`, before its first task: that
  /// stream's device queue becomes the thread's current one.
  virtual void enter(int stream) = 0;

  /// On the calling thread's stream, before its next task: the device waits
  /// until task `task` of `step` (run on another stream) has finished there.
  virtual void wait_for(int step, int task) = 0;

  /// Around a task's body on its thread.
  virtual void start(int step, int task) = 0;
  virtual void end(int step, int task) = 0;

  /// After the run: waits for the device. Then times_us gives the [start,
  /// end] of a task that ran, microseconds on the tracer's axis.
  virtual void finish() = 0;
  virtual std::pair<double, double> times_us(int step, int task) = 0;
};

/// The stream set for `device`: `streams` plan streams, `steps` x `tasks`
/// tasks at most. On a GPU (CUDA builds only) the CUDA implementation; else
/// the CPU's, whose every call does nothing.
std::unique_ptr<StreamSet> make_stream_set(c10::Device device, int streams, int steps, int tasks);

}  // namespace clustertwin::real
