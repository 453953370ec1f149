// Twin speed at 1,536 workers (Twin-core issue). Targets: an all-to-all of
// 64 MiB per worker at flow fidelity simulates in at most 1 s of wall time;
// a synthetic step (compute, one all-reduce, two all-to-alls on separate
// streams with overlap) in at most 1 s per simulated step. Each simulation
// runs in its own child process (SimGrid allows one engine per process): the
// time is the whole simulate_plan call, platform build included, and the
// child's peak resident memory is reported.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "models/plan/plan_json.h"
#include "sim/core/collective_bench.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim {
namespace {

constexpr int kWorkers = 1536;

double children_peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void BM_AllToAll1536Flow(benchmark::State& state) {
  auto profile = cluster::load_cluster_profile("npu-1536");
  CollectiveBenchOptions o;
  o.op = models::CollectiveOp::kAllToAll;
  o.sizes = {int64_t{64} << 20};
  o.workers = kWorkers;
  o.fidelity = Fidelity::kFlow;
  double simulated = 0;
  for (auto _ : state) {
    auto rows = bench_collective(o, *profile);
    if (!rows.is_ok()) {
      state.SkipWithError(rows.status().message().c_str());
      return;
    }
    simulated = rows->front().time_s;
  }
  state.counters["simulated_ms"] = simulated * 1e3;
  state.counters["child_peak_rss_MB"] = children_peak_rss_mb();
}

void BM_SyntheticStep1536(benchmark::State& state) {
  auto profile = cluster::load_cluster_profile("npu-1536");
  auto plan = models::read_plan(std::string(CT_SOURCE_DIR) + "/sim/examples/plans/synthetic_overlap.json");
  if (!profile.is_ok() || !plan.is_ok()) {
    state.SkipWithError((profile.is_ok() ? plan.status() : profile.status()).message().c_str());
    return;
  }
  SimOptions o;
  o.workers = kWorkers;
  o.steps = static_cast<int>(state.range(0));
  o.warmup_steps = 1;
  double step = 0, wall = 0;
  for (auto _ : state) {
    auto r = simulate_plan(*plan, *profile, o);
    if (!r.is_ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    step = r->step_time_s;
    wall = r->wall_s;
  }
  state.counters["simulated_step_ms"] = step * 1e3;
  state.counters["wall_s_per_simulated_step"] = wall / static_cast<double>(o.steps);
  state.counters["child_peak_rss_MB"] = children_peak_rss_mb();
}

BENCHMARK(BM_AllToAll1536Flow)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SyntheticStep1536)->Arg(4)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace clustertwin::sim

BENCHMARK_MAIN();
