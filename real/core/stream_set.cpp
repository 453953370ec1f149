#include "real/core/stream_set.h"

namespace clustertwin::real {

#if defined(CT_HAVE_CUDA_TORCH)
// stream_set_cuda.cpp
std::unique_ptr<StreamSet> make_cuda_stream_set(c10::Device device, int streams, int steps, int tasks);
#endif

namespace {

class CpuStreamSet final : public StreamSet {
 public:
  bool timed() const override { return false; }
  void mark_origin(const std::function<double()>&) override {}
  void enter(int) override {}
  void wait_for(int, int) override {}
  void start(int, int) override {}
  void end(int, int) override {}
  void finish() override {}
  std::pair<double, double> times_us(int, int) override { return {0, 0}; }
};

}  // namespace

std::unique_ptr<StreamSet> make_stream_set(c10::Device device, int streams, int steps, int tasks) {
#if defined(CT_HAVE_CUDA_TORCH)
  if (device.is_cuda()) return make_cuda_stream_set(device, streams, steps, tasks);
#else
  (void)device, (void)streams, (void)steps, (void)tasks;
#endif
  return std::make_unique<CpuStreamSet>();
}

}  // namespace clustertwin::real
