// Job-mix speed (issue 33): `sim mix` of 4 jobs totalling 1,536 workers on
// NestPipe's cluster (sim/examples/mixes/four-jobs-1536.yaml) finishes in
// under 60 s on 2 cores. The time is the whole run_mix call: the mix and
// each job alone, each in its own child process, two at a time, platform
// builds and NestPipe's key statistics included.

#include <benchmark/benchmark.h>

#include "models/cluster/cluster_profile.h"
#include "sim/mix/mix_run.h"
#include "sim/mix/mix_spec.h"

namespace clustertwin::sim::mix {
namespace {

void BM_FourJobs1536(benchmark::State& state) {
  auto mix = read_mix(std::string(CT_SOURCE_DIR) + "/sim/examples/mixes/four-jobs-1536.yaml");
  if (!mix.is_ok()) {
    state.SkipWithError(mix.status().message().c_str());
    return;
  }
  auto profile = cluster::load_cluster_profile(mix->profile);
  if (!profile.is_ok() || !check_mix(*mix, *profile).is_ok()) {
    state.SkipWithError(profile.is_ok() ? "check_mix failed" : profile.status().message().c_str());
    return;
  }
  MixOptions options;
  options.placement = state.range(0) == 0 ? "packed" : "spread";
  options.parallel = 2;
  MixResult last;
  for (auto _ : state) {
    auto result = run_mix(*mix, *profile, options);
    if (!result.is_ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    last = std::move(result).value();
  }
  int workers = 0;
  for (const JobResult& job : last.jobs) {
    workers += job.workers;
    state.counters["slowdown_" + job.name] = job.slowdown;
  }
  state.counters["workers"] = workers;
  state.counters["wall_s"] = last.wall_s;
  state.SetLabel(options.placement);
}
BENCHMARK(BM_FourJobs1536)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace clustertwin::sim::mix

BENCHMARK_MAIN();
