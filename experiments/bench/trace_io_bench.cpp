// Trace I/O speed and memory: writes one million events and reads them back,
// plain and gzipped. Targets (Foundation issue): write >= 1,000,000 events/s,
// read >= 300,000 events/s, peak memory while reading < 200 MB.
//
// Counters: events_per_s (rate), bytes_per_event, and for reads peak_rss_MB
// (the process's resident high-water mark, reset just before reading through
// /proc/self/clear_refs, so it is the peak while reading, baseline included)
// and rss_growth_MB (that peak minus the resident size before reading).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace clustertwin::traces {
namespace {

constexpr int64_t kEvents = 1'000'000;

std::string bench_path(bool gzip) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/ct_trace_io_bench_" + std::to_string(::getpid()) +
         (gzip ? ".json.gz" : ".json");
}

// Resident memory in MB from /proc/self/status: "VmRSS" now or "VmHWM" peak.
double proc_status_mb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size())) / 1024.0;  // kB -> MB
  }
  return -1;
}

void reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // "5" resets VmHWM to the current VmRSS (Linux >= 4.0)
}

// Events shaped like an executor's: a compute and a collective per micro-batch.
Event event_at(int64_t i) {
  Event e;
  const bool comm = (i % 2) == 1;
  e.name = comm ? "embedding all2all" : "dense forward";
  e.cost_key = comm ? "emb_a2a" : "dense_fwd";
  e.category = comm ? Category::kComm : Category::kCompute;
  e.rank = i % 8;
  e.stream = comm ? 1 : 0;
  e.ts_us = static_cast<double>(i) * 12.375;
  e.dur_us = 10.125 + static_cast<double>(i % 7);
  e.task_id = i % 64;
  e.step = i / 512;
  e.micro_batch = (i / 8) % 4;
  if (comm) {
    e.bytes = 1 << 20;
    e.collective = "alltoall";
    e.group_size = 8;
  } else {
    e.flops = 2.5e9;
  }
  return e;
}

Metadata bench_metadata() {
  Metadata m;
  m.source = Source::kSim;
  m.system = "bench";
  m.world_size = 8;
  m.clustertwin_version = "bench";
  m.streams = {"compute", "comm"};
  return m;
}

void write_trace_file(benchmark::State& state, bool gzip) {
  const std::string path = bench_path(gzip);
  for (auto _ : state) {
    auto writer = TraceWriter::create(path, bench_metadata());
    if (!writer.is_ok()) {
      state.SkipWithError(writer.status().message().c_str());
      return;
    }
    Event e = event_at(0);
    for (int64_t i = 0; i < kEvents; ++i) {
      // Change what varies per event without rebuilding the strings.
      e.ts_us = static_cast<double>(i) * 12.375;
      e.dur_us = 10.125 + static_cast<double>(i % 7);
      e.rank = i % 8;
      e.task_id = i % 64;
      e.step = i / 512;
      (*writer)->write(e);
    }
    const Status s = (*writer)->close();
    if (!s.is_ok()) state.SkipWithError(s.message().c_str());
  }
  state.SetItemsProcessed(state.iterations() * kEvents);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(kEvents), benchmark::Counter::kIsIterationInvariantRate);
  const double bytes = static_cast<double>(std::filesystem::file_size(path));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  state.counters["bytes_per_event"] = bytes / static_cast<double>(kEvents);
}

void read_trace_file(benchmark::State& state, bool gzip) {
  const std::string path = bench_path(gzip);
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("run the write benchmark first");
    return;
  }
  double peak = 0, before = 0;
  int64_t count = 0;
  for (auto _ : state) {
    before = proc_status_mb("VmRSS");
    reset_peak_rss();
    auto reader = TraceReader::open(path);
    Event e;
    count = 0;
    while ((*reader)->next(&e))
      ++count;
    peak = proc_status_mb("VmHWM");
    if (!(*reader)->status().is_ok()) state.SkipWithError((*reader)->status().message().c_str());
    if (count != kEvents) state.SkipWithError("read back a different number of events");
  }
  state.SetItemsProcessed(state.iterations() * count);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(count), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_rss_MB"] = peak;
  state.counters["rss_growth_MB"] = peak - before;
}

void BM_WriteJson(benchmark::State& state) {
  write_trace_file(state, false);
}
void BM_ReadJson(benchmark::State& state) {
  read_trace_file(state, false);
}
void BM_WriteJsonGz(benchmark::State& state) {
  write_trace_file(state, true);
}
void BM_ReadJsonGz(benchmark::State& state) {
  read_trace_file(state, true);
}

// One iteration each: a million events is already a long, stable measurement.
BENCHMARK(BM_WriteJson)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadJson)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WriteJsonGz)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadJsonGz)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace clustertwin::traces

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (bool gzip : {false, true})
    std::remove(clustertwin::traces::bench_path(gzip).c_str());
  return 0;
}
