// Tracer overhead (Real-executor-core issue). Targets: under 2 us per traced
// task, and under 1% added time on a 10 ms task.
//
// BM_TraceOneTask times what the plan runner adds around a task body: two
// clock reads, building the event and recording it. BM_Task10ms runs a fixed
// arithmetic loop of about 10 ms, without (arg 0) and with (arg 1) that
// wrapper; the counter overhead_pct of the traced run compares the two
// (noisy on a shared machine: the per-task cost over 10 ms is the tight bound).

#include <benchmark/benchmark.h>

#include <chrono>

#include "models/plan/task_event.h"
#include "real/core/tracer.h"

namespace clustertwin::real {
namespace {

models::Task sample_task() {
  models::Task t;
  t.id = 7;
  t.name = "embedding all2all";
  t.kind = models::TaskKind::kCollective;
  t.cost_key = "emb_a2a";
  t.bytes = 1 << 20;
  t.collective = models::Collective{};
  t.collective->op = models::CollectiveOp::kAllToAll;
  return t;
}

void BM_TraceOneTask(benchmark::State& state) {
  Tracer tracer(0, 1 << 20);
  tracer.start();
  const models::Task t = sample_task();
  int step = 0;
  for (auto _ : state) {
    const double start = tracer.now_us();
    const double end = tracer.now_us();
    tracer.record(models::task_event(t, 0, 1, step++, start, end, 8));
    if (tracer.size() >= (1u << 20) - 1) {
      state.PauseTiming();
      tracer.clear();
      state.ResumeTiming();
    }
  }
  // The Time column is the cost per traced task.
  state.SetItemsProcessed(state.iterations());
}

// About 10 ms of dependent floating-point work on this machine (fixed, not timed).
double work(int64_t n) {
  double x = 1.0;
  for (int64_t i = 0; i < n; ++i)
    x = x * 1.0000001 + 1e-9;
  return x;
}

constexpr int64_t kWork = 7'000'000;
double untraced_seconds = 0;

void BM_Task10ms(benchmark::State& state) {
  const bool traced = state.range(0) == 1;
  Tracer tracer(0, 1 << 16);
  tracer.start();
  const models::Task t = sample_task();
  int step = 0;
  double total = 0;
  for (auto _ : state) {
    const auto begin = std::chrono::steady_clock::now();
    if (traced) {
      const double start = tracer.now_us();
      benchmark::DoNotOptimize(work(kWork));
      tracer.record(models::task_event(t, 0, 1, step++, start, tracer.now_us(), 8));
    } else {
      benchmark::DoNotOptimize(work(kWork));
    }
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  }
  const double mean = total / static_cast<double>(state.iterations());
  state.counters["task_ms"] = mean * 1e3;
  if (!traced) untraced_seconds = mean;
  if (traced && untraced_seconds > 0)
    state.counters["overhead_pct"] = 100 * (mean - untraced_seconds) / untraced_seconds;
}

BENCHMARK(BM_TraceOneTask);
BENCHMARK(BM_Task10ms)->Arg(0)->Arg(1)->Iterations(100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace clustertwin::real

BENCHMARK_MAIN();
