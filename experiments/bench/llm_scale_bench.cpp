// The LLM twin's speed (issue 47): one training step of GPT-3 175B (tp 8,
// pp 16, micro-batch 1, 1F1B, full recomputation, zero 1) on 1,024 and
// 16,384 GPUs of h100-dgx, each a whole simulation (platform build included)
// in a process of its own: wall time and the peak resident memory of the
// simulation. The global batch: GPT-3's 1,536 sequences at 1,024 GPUs (12
// micro-batches a pipeline), 16,384 at 16,384 (128 a pipeline).
//
//   build/experiments/bench/ct_llm_scale_bench

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <sstream>

#include "sim/core/isolated.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::sim::llm {
namespace {

struct Measured {
  double wall_s = 0, peak_rss_mb = 0, step_s = 0, mfu = 0;
  int simulated_workers = 0;
  double events = 0;
};

StatusOr<Measured> measure(int workers, int64_t global_batch) {
  auto out = run_isolated([&]() -> StatusOr<std::string> {
    auto profile = cluster::load_cluster_profile("h100-dgx");
    if (!profile.is_ok()) return profile.status();
    LlmSetup setup = default_llm_setup();
    setup.split.dp = workers / (setup.split.tp * setup.split.pp);
    setup.split.global_batch = global_batch;
    setup.split.zero = 1;
    setup.split.sequence_parallel = true;
    const auto start = std::chrono::steady_clock::now();
    auto r = simulate_llm(setup, *profile, llm_sim_options(workers));
    if (!r.is_ok()) return r.status();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);  // the simulation's child process
    std::ostringstream text;
    text.precision(17);
    text << wall << " " << static_cast<double>(usage.ru_maxrss) / 1024.0 << " " << r->step_s << " " << r->mfu << " "
         << r->sim.simulated_workers << " " << r->sim.events;
    return text.str();
  });
  if (!out.is_ok()) return out.status();
  Measured m;
  std::istringstream in(*out);
  in >> m.wall_s >> m.peak_rss_mb >> m.step_s >> m.mfu >> m.simulated_workers >> m.events;
  return m;
}

void BM_Gpt3Step(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  for (auto _ : state) {
    auto m = measure(workers, workers == 1024 ? 1536 : workers);
    if (!m.is_ok()) {
      state.SkipWithError(m.status().message().c_str());
      return;
    }
    state.SetIterationTime(m->wall_s);
    state.counters["wall_s"] = m->wall_s;
    state.counters["peak_rss_MB"] = m->peak_rss_mb;
    state.counters["step_s"] = m->step_s;
    state.counters["mfu"] = m->mfu;
    state.counters["simulated_workers"] = m->simulated_workers;
    state.counters["tasks"] = m->events;
  }
}
BENCHMARK(BM_Gpt3Step)->Arg(1024)->Arg(16384)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace clustertwin::sim::llm

BENCHMARK_MAIN();
