#include "real/core/tracer.h"

#include <time.h>

#include <algorithm>

#include "common/version.h"
#include "real/core/communicator.h"
#include "real/core/device.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace clustertwin::real {

double Tracer::thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

Tracer::Tracer(int rank, size_t reserve) : rank_(rank) {
  events_.reserve(reserve);
}

void Tracer::record(traces::Event event) {
  event.rank = rank_;
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

size_t Tracer::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

void Tracer::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
}

std::vector<traces::Event> Tracer::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

Status Tracer::gather_and_write(Communicator& comm, Group& world, const traces::Metadata& metadata,
                                const std::string& path) const {
  // Each rank's events as JSON objects separated by commas, gathered as bytes.
  std::string text;
  for (const traces::Event& e : events()) {
    if (!text.empty()) text += ",\n";
    traces::append_event_json(&text, e);
  }
  const auto on_device = at::TensorOptions().device(comm.device());
  at::Tensor size = at::full({1}, static_cast<int64_t>(text.size()), on_device.dtype(at::kLong));
  at::Tensor sizes_on_device = at::zeros({world.size()}, on_device.dtype(at::kLong));
  CT_RETURN_IF_ERROR(comm.all_gather(world, sizes_on_device, size));
  const at::Tensor sizes = sizes_on_device.to(at::kCPU);
  const int64_t longest = std::max<int64_t>(1, sizes.max().item<int64_t>());
  at::Tensor mine = at::zeros({longest}, at::kByte);
  std::copy(text.begin(), text.end(), mine.data_ptr<uint8_t>());
  mine = mine.to(comm.device());
  at::Tensor all_on_device = at::zeros({longest * world.size()}, on_device.dtype(at::kByte));
  CT_RETURN_IF_ERROR(comm.all_gather(world, all_on_device, mine));
  if (comm.rank() != 0) return Status::ok();
  const at::Tensor all = all_on_device.to(at::kCPU);

  std::string document = "{\"traceEvents\":[";
  bool first = true;
  for (int r = 0; r < world.size(); ++r) {
    const int64_t n = sizes[r].item<int64_t>();
    if (n == 0) continue;
    if (!first) document += ",";
    first = false;
    document.append(reinterpret_cast<const char*>(all.data_ptr<uint8_t>()) + r * longest, static_cast<size_t>(n));
  }
  document += "]}";
  auto reader = traces::TraceReader::from_text(document, "gathered events");
  std::vector<traces::Event> merged;
  traces::Event e;
  while (reader->next(&e))
    merged.push_back(e);
  if (!reader->status().is_ok()) return Status::internal(reader->status().message());
  std::stable_sort(merged.begin(), merged.end(), [](const traces::Event& a, const traces::Event& b) {
    return std::tie(a.rank, a.stream, a.ts_us) < std::tie(b.rank, b.stream, b.ts_us);
  });
  auto writer = traces::TraceWriter::create(path, metadata);
  if (!writer.is_ok()) return writer.status();
  for (const traces::Event& event : merged)
    (*writer)->write(event);
  return (*writer)->close();
}

traces::Metadata real_run_metadata(const Communicator& comm, const std::string& system, const std::string& variant,
                                   const std::string& config_json, uint64_t seed) {
  traces::Metadata m;
  m.source = traces::Source::kReal;
  m.system = system;
  m.variant = variant;
  m.world_size = comm.world_size();
  m.hardware = describe_device(comm.device());  // "cpu", or "cuda:0 (NVIDIA H200, 139.8 GiB)"
  m.config_json = config_json;
  m.seed = seed;
  m.clustertwin_version = std::string(version());
  return m;
}

}  // namespace clustertwin::real
