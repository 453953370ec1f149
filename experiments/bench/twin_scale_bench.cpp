// Twin speed on flat and very large clusters (issue 32). Each case is one
// whole simulation, platform build included, in a process of its own, and
// reports its wall time and the peak resident memory of that process.
//
// Targets on the flat 1,536 x 1 profile (experiments/bench/profiles/flat-1536.yaml,
// issue 32's side-by-side with ASTRA-sim): a ring all-reduce of 64 MiB and an
// all-to-all of 64 MiB each under 1 s; 10 x (1 ms compute -> all-reduce 64 MiB)
// under 2 s. A synthetic data-parallel step (experiments/bench/plans/dp_step.json:
// forward, four backward chunks each followed by a 64 MiB all-reduce bucket,
// optimizer) at 16,384 workers on a 2,048-node x 8-GPU fat tree under 60 s and
// 8 GiB, with memory per simulated worker; 65,536 workers reported, whatever
// they are (a case that fails says why).
//
//   build/experiments/bench/ct_twin_scale_bench                          # all cases
//   build/experiments/bench/ct_twin_scale_bench --benchmark_filter=Flat  # the flat 1,536 ones

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "experiments/bench/isolated_run.h"
#include "models/plan/plan_json.h"
#include "sim/core/collective_bench.h"
#include "sim/core/simulator.h"

namespace clustertwin::sim {
namespace {

std::string bench_file(const std::string& name) {
  return std::string(CT_SOURCE_DIR) + "/experiments/bench/" + name;
}

// What one case measured.
struct Measured {
  double wall_s = 0;
  double peak_rss_mb = 0;  // the simulation process's peak resident memory
  double simulated_s = 0;  // the simulated time the case reports (collective time or step time)
  int simulated_workers = 0;
};

// Runs `simulate` (which returns the simulated time and simulated workers) in
// a process of its own (isolated_run.h).
StatusOr<Measured> measure(const std::function<StatusOr<std::pair<double, int>>()>& simulate) {
  auto run = run_measured([&]() -> StatusOr<std::vector<double>> {
    auto simulated = simulate();
    if (!simulated.is_ok()) return simulated.status();
    return std::vector<double>{simulated->first, static_cast<double>(simulated->second)};
  });
  if (!run.is_ok()) return run.status();
  return Measured{run->wall_s, run->peak_rss_mb, run->figures.at(0), static_cast<int>(run->figures.at(1))};
}

void report(benchmark::State& state, const StatusOr<Measured>& m, int workers) {
  if (!m.is_ok()) {
    state.SkipWithError(m.status().message().c_str());
    return;
  }
  state.SetIterationTime(m->wall_s);
  state.counters["wall_s"] = m->wall_s;
  state.counters["peak_rss_MB"] = m->peak_rss_mb;
  state.counters["simulated_ms"] = m->simulated_s * 1e3;
  state.counters["workers"] = workers;
  state.counters["simulated_workers"] = m->simulated_workers;
  state.counters["KB_per_simulated_worker"] = m->peak_rss_mb * 1024.0 / std::max(1, m->simulated_workers);
}

// `clustertwin sim collective --op OP --bytes 64M --workers W --platform PROFILE --fidelity flow`.
void collective_case(benchmark::State& state, const std::string& profile_file, models::CollectiveOp op) {
  auto profile = cluster::load_cluster_profile(bench_file(profile_file));
  if (!profile.is_ok()) {
    state.SkipWithError(profile.status().message().c_str());
    return;
  }
  CollectiveBenchOptions o;
  o.op = op;
  o.sizes = {int64_t{64} << 20};
  o.workers = profile->devices();
  o.fidelity = Fidelity::kFlow;
  for (auto _ : state) {
    auto m = measure([&]() -> StatusOr<std::pair<double, int>> {
      auto rows = bench_collective(o, *profile);
      if (!rows.is_ok()) return rows.status();
      return std::pair{rows->front().time_s, o.workers};
    });
    report(state, m, o.workers);
  }
}

// `clustertwin sim plan PLAN --workers W --platform PROFILE --steps S --warmup 1 --drain 0` (steps 1: no warm-up).
void plan_case(benchmark::State& state, const std::string& plan_file, const std::string& profile_file, int steps) {
  auto profile = cluster::load_cluster_profile(bench_file(profile_file));
  auto plan = models::read_plan(bench_file(plan_file));
  if (!profile.is_ok() || !plan.is_ok()) {
    state.SkipWithError((profile.is_ok() ? plan.status() : profile.status()).message().c_str());
    return;
  }
  SimOptions o;
  o.workers = profile->devices();
  o.steps = steps;
  o.warmup_steps = steps > 1 ? 1 : 0;
  o.drain_steps = 0;
  for (auto _ : state) {
    auto m = measure([&]() -> StatusOr<std::pair<double, int>> {
      auto r = simulate_plan(*plan, *profile, o);
      if (!r.is_ok()) return r.status();
      return std::pair{r->step_time_s, r->simulated_workers};
    });
    report(state, m, o.workers);
    if (m.is_ok()) state.counters["wall_s_per_simulated_step"] = m->wall_s / steps;
  }
}

void BM_Flat1536_RingAllReduce64MiB(benchmark::State& state) {
  collective_case(state, "profiles/flat-1536.yaml", models::CollectiveOp::kAllReduce);
}
void BM_Flat1536_AllToAll64MiB(benchmark::State& state) {
  collective_case(state, "profiles/flat-1536.yaml", models::CollectiveOp::kAllToAll);
}
void BM_Flat1536_10xComputeThenAllReduce64MiB(benchmark::State& state) {
  plan_case(state, "plans/compute_allreduce_x10.json", "profiles/flat-1536.yaml", 1);
}
void BM_FatTree16384_DataParallelStep(benchmark::State& state) {
  plan_case(state, "plans/dp_step.json", "profiles/fat-tree-2048x8.yaml", 3);
}
void BM_Flat16384_RingAllReduce64MiB(benchmark::State& state) {
  collective_case(state, "profiles/flat-16384.yaml", models::CollectiveOp::kAllReduce);
}
void BM_Flat16384_AllToAll64MiB(benchmark::State& state) {
  collective_case(state, "profiles/flat-16384.yaml", models::CollectiveOp::kAllToAll);
}
void BM_FatTree65536_DataParallelStep(benchmark::State& state) {
  plan_case(state, "plans/dp_step.json", "profiles/fat-tree-8192x8.yaml", 3);
}
void BM_Flat65536_RingAllReduce64MiB(benchmark::State& state) {
  collective_case(state, "profiles/flat-65536.yaml", models::CollectiveOp::kAllReduce);
}

// One iteration each: a case is a whole simulation, seconds long at scale.
#define CT_CASE(name) BENCHMARK(name)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond)
CT_CASE(BM_Flat1536_RingAllReduce64MiB);
CT_CASE(BM_Flat1536_AllToAll64MiB);
CT_CASE(BM_Flat1536_10xComputeThenAllReduce64MiB);
CT_CASE(BM_FatTree16384_DataParallelStep);
CT_CASE(BM_Flat16384_RingAllReduce64MiB);
CT_CASE(BM_Flat16384_AllToAll64MiB);
CT_CASE(BM_FatTree65536_DataParallelStep);
CT_CASE(BM_Flat65536_RingAllReduce64MiB);
#undef CT_CASE

}  // namespace
}  // namespace clustertwin::sim

BENCHMARK_MAIN();
