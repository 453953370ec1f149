// The LLM twin's speed (issue 47): one training step of GPT-3 175B (tp 8,
// pp 16, micro-batch 1, 1F1B, full recomputation, zero 1) on 1,024 and
// 16,384 GPUs of h100-dgx, each a whole simulation (platform build included)
// in a process of its own: wall time and the peak resident memory of the
// simulation. The global batch: GPT-3's 1,536 sequences at 1,024 GPUs (12
// micro-batches a pipeline), 16,384 at 16,384 (128 a pipeline).
//
//   build/experiments/bench/ct_llm_scale_bench

#include <benchmark/benchmark.h>

#include "experiments/bench/isolated_run.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::sim::llm {

using sim::IsolatedRun;
using sim::run_measured;
namespace {

// The step simulated, its MFU, the GPUs simulated and the tasks run, measured in a process of its own.
StatusOr<IsolatedRun> measure(int workers, int64_t global_batch) {
  return run_measured([&]() -> StatusOr<std::vector<double>> {
    auto profile = cluster::load_cluster_profile("h100-dgx");
    if (!profile.is_ok()) return profile.status();
    LlmSetup setup = default_llm_setup();
    setup.split.dp = workers / (setup.split.tp * setup.split.pp);
    setup.split.global_batch = global_batch;
    setup.split.zero = 1;
    setup.split.sequence_parallel = true;
    auto r = simulate_llm(setup, *profile, llm_sim_options(workers));
    if (!r.is_ok()) return r.status();
    return std::vector<double>{r->step_s, r->mfu, static_cast<double>(r->sim.simulated_workers),
                               static_cast<double>(r->sim.events)};
  });
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
    state.counters["step_s"] = m->figures.at(0);
    state.counters["mfu"] = m->figures.at(1);
    state.counters["simulated_workers"] = m->figures.at(2);
    state.counters["tasks"] = m->figures.at(3);
  }
}
BENCHMARK(BM_Gpt3Step)->Arg(1024)->Arg(16384)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace clustertwin::sim::llm

BENCHMARK_MAIN();
