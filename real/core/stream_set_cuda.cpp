// The GPU's StreamSet (stream_set.h): one CUDA stream per plan stream from
// the pool of the rank's device, and two timing events per task and step.
// Built only against a CUDA-enabled libtorch (CT_HAVE_CUDA_TORCH); the
// compile-only check of tests/real/cuda_paths_compile_check.sh parses it
// on machines without one.

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <vector>

#include "common/check.h"
#include "real/core/stream_set.h"

namespace clustertwin::real {
namespace {

class CudaStreamSet final : public StreamSet {
 public:
  CudaStreamSet(c10::Device device, int streams, int steps, int tasks)
      : device_(device), tasks_(tasks), origin_(cudaEventDefault) {
    for (int s = 0; s < streams; ++s)
      streams_.push_back(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index()));
    // cudaEventDefault, not ATen's default (cudaEventDisableTiming): these time tasks.
    events_.reserve(static_cast<size_t>(steps) * static_cast<size_t>(tasks) * 2);
    for (size_t i = 0; i < static_cast<size_t>(steps) * static_cast<size_t>(tasks) * 2; ++i)
      events_.emplace_back(cudaEventDefault);
  }

  bool timed() const override { return true; }

  void mark_origin(const std::function<double()>& now_us) override {
    c10::cuda::set_device(device_.index());
    c10::cuda::device_synchronize();
    origin_.record(c10::cuda::getCurrentCUDAStream(device_.index()));
    origin_.synchronize();
    origin_us_ = now_us();
  }

  void enter(int stream) override {
    CT_CHECK(stream >= 0 && stream < static_cast<int>(streams_.size())) << "stream " << stream;
    // A new thread starts on GPU 0 with the default stream: both are per thread.
    c10::cuda::set_device(device_.index());
    c10::cuda::setCurrentCUDAStream(streams_[static_cast<size_t>(stream)]);
  }

  void wait_for(int step, int task) override {
    event(step, task, 1).block(c10::cuda::getCurrentCUDAStream(device_.index()));
  }

  void start(int step, int task) override {
    event(step, task, 0).record(c10::cuda::getCurrentCUDAStream(device_.index()));
  }
  void end(int step, int task) override {
    event(step, task, 1).record(c10::cuda::getCurrentCUDAStream(device_.index()));
  }

  void finish() override {
    c10::cuda::set_device(device_.index());
    c10::cuda::device_synchronize();
  }

  std::pair<double, double> times_us(int step, int task) override {
    // elapsed_time: milliseconds between two completed events, ~0.5 us resolution.
    const double start = origin_us_ + 1000.0 * static_cast<double>(origin_.elapsed_time(event(step, task, 0)));
    const double end = origin_us_ + 1000.0 * static_cast<double>(origin_.elapsed_time(event(step, task, 1)));
    return {start, std::max(start, end)};
  }

 private:
  at::cuda::CUDAEvent& event(int step, int task, int which) {
    const size_t i = (static_cast<size_t>(step) * static_cast<size_t>(tasks_) + static_cast<size_t>(task)) * 2 +
                     static_cast<size_t>(which);
    CT_CHECK(i < events_.size()) << "step " << step << " task " << task;
    return events_[i];
  }

  c10::Device device_;
  int tasks_;
  std::vector<c10::cuda::CUDAStream> streams_;
  std::vector<at::cuda::CUDAEvent> events_;
  at::cuda::CUDAEvent origin_;
  double origin_us_ = 0;
};

}  // namespace

std::unique_ptr<StreamSet> make_cuda_stream_set(c10::Device device, int streams, int steps, int tasks) {
  return std::make_unique<CudaStreamSet>(device, streams, steps, tasks);
}

}  // namespace clustertwin::real
