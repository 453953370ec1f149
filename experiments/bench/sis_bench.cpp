// SIS's overhead on a GRPO loss (the SIS issue): forward and backward of the
// token-level clipped loss at 64 sequences x 1,024 tokens, with and without
// SIS's acceptance test on a 32k vocabulary's top-K (K = 20) log-probabilities.
// The figure to read: time(with SIS) / time(without) - 1.

#include <ATen/CPUGeneratorImpl.h>
#include <benchmark/benchmark.h>

#include "real/sis/policy_loss.h"

namespace {

using namespace clustertwin::real::sis;

constexpr int64_t kSequences = 64, kTokens = 1024, kTopK = 20;

struct Inputs {
  at::Tensor logp_new, logp_old, topk_old, topk_new, in_topk, advantages;
};

const Inputs& inputs() {
  static const Inputs in = [] {
    at::Generator g = at::detail::createCPUGenerator(1);
    const auto f = at::TensorOptions().dtype(at::kFloat);
    Inputs x;
    x.logp_old = -at::rand({kSequences, kTokens}, g, f) * 3;
    x.logp_new = x.logp_old + 0.05 * at::randn({kSequences, kTokens}, g, f);
    x.topk_old = -at::rand({kSequences, kTokens, kTopK}, g, f) * 6;
    x.topk_new = x.topk_old + 0.05 * at::randn({kSequences, kTokens, kTopK}, g, f);
    x.in_topk = at::rand({kSequences, kTokens}, g, f) < 0.95;
    x.advantages = at::randn({kSequences}, g, f);
    return x;
  }();
  return in;
}

void run(benchmark::State& state, bool sis) {
  const Inputs& x = inputs();
  LossOptions o;
  o.kind = LossKind::kPpo;
  o.sis = sis;
  for (auto _ : state) {
    at::Tensor logp_new = x.logp_new.detach().requires_grad_(true);
    LossBatch b;
    b.tokens.logp_new = logp_new;
    b.tokens.logp_old = x.logp_old;
    b.tokens.topk_logp_old = x.topk_old;
    b.tokens.topk_logp_new = x.topk_new;
    b.tokens.in_topk = x.in_topk;
    b.tokens.vocab = 32768;
    b.advantages = x.advantages;
    auto r = policy_loss(b, o);
    if (!r.is_ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    r->loss.backward();
    benchmark::DoNotOptimize(logp_new.grad().data_ptr());
  }
  state.counters["tokens"] = static_cast<double>(kSequences * kTokens);
}

void BM_GrpoLoss(benchmark::State& state) {
  run(state, false);
}
void BM_GrpoLossWithSis(benchmark::State& state) {
  run(state, true);
}

BENCHMARK(BM_GrpoLoss)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_GrpoLossWithSis)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace

BENCHMARK_MAIN();
