// SIS's overhead on a GRPO loss (the SIS issue): forward and backward of the
// token-level clipped loss at 64 sequences x 1,024 tokens, with and without
// SIS's acceptance test on a 32k vocabulary's top-K (K = 20) log-probabilities.
// Two readings of "the loss":
//
//   BM_GrpoLoss*            from per-token log-probabilities already gathered
//                           (the loss arithmetic alone: 65,536 tokens)
//   BM_GrpoLossFromLogits   from the policy head's logits over the 32k
//                           vocabulary: log-softmax, the gathers (SIS adds
//                           the top-K one), the loss, and backward to the
//                           logits; in chunks of 4 sequences as memory-bound
//                           trainers do (the whole [64, 1024, 32768] logits
//                           and their gradient would take 17 GB), with and
//                           without SIS interleaved
//
// The figure to read: the counter `sis_overhead_pct`, 100 (time with SIS /
// time without - 1); for BM_GrpoLossWithSis against BM_GrpoLoss (the
// benchmarks run in the order registered).

#include <ATen/CPUGeneratorImpl.h>
#include <benchmark/benchmark.h>

#include <chrono>

#include "real/sis/policy_loss.h"

namespace {

using namespace clustertwin::real::sis;

// The mean seconds per iteration of the last benchmark run without SIS, for the overhead counter.
double g_without_sis = 0;

// Times the loop by wall clock beside Google Benchmark's own, to relate the two rows.
struct Clock {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

void report(benchmark::State& state, bool sis, double seconds) {
  const double per_iteration = seconds / static_cast<double>(state.iterations());
  if (!sis) {
    g_without_sis = per_iteration;
  } else if (g_without_sis > 0) {
    state.counters["sis_overhead_pct"] = 100 * (per_iteration / g_without_sis - 1);
  }
}

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
  const Clock clock;
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
  report(state, sis, clock.seconds());
  state.counters["tokens"] = static_cast<double>(kSequences * kTokens);
}

void BM_GrpoLoss(benchmark::State& state) {
  run(state, false);
}
void BM_GrpoLossWithSis(benchmark::State& state) {
  run(state, true);
}

// The logits of one chunk of sequences (reused by every chunk: the data is far larger than any cache either way),
// and per chunk the sampled tokens, the behaviour policy's log-probabilities of them and of its top-K.
constexpr int64_t kVocab = 32768, kChunk = 4;

struct LogitInputs {
  at::Tensor logits;                           // [kChunk, T, V]
  at::Tensor y, logp_old, topk_idx, topk_old;  // [S, T], [S, T], [S, T, K], [S, T, K]
  at::Tensor advantages;
};

const LogitInputs& logit_inputs() {
  static const LogitInputs in = [] {
    at::Generator g = at::detail::createCPUGenerator(2);
    const auto f = at::TensorOptions().dtype(at::kFloat);
    LogitInputs x;
    x.logits = 2 * at::randn({kChunk, kTokens, kVocab}, g, f);
    x.y = at::randint(kVocab, {kSequences, kTokens}, g, at::TensorOptions().dtype(at::kLong));
    x.logp_old = -at::rand({kSequences, kTokens}, g, f) * 3;
    x.topk_idx = at::randint(kVocab, {kSequences, kTokens, kTopK}, g, at::TensorOptions().dtype(at::kLong));
    x.topk_old = -at::rand({kSequences, kTokens, kTopK}, g, f) * 6;
    x.advantages = at::randn({kSequences}, g, f);
    return x;
  }();
  return in;
}

// One chunk's loss from logits, forward and backward; returns its seconds, and in `*loss_part` the seconds of
// the part SIS changes: the top-K gather and the loss call, which runs the acceptance test.
double chunk_from_logits(const LogitInputs& x, int64_t first, bool sis, double* loss_part) {
  LossOptions o;
  o.kind = LossKind::kPpo;
  o.sis = sis;
  o.seed = static_cast<uint64_t>(first);
  const Clock clock;
  at::Tensor logits = x.logits.detach().requires_grad_(true);
  const at::Tensor logp = at::log_softmax(logits, -1);
  const at::Tensor rows = at::arange(first, first + kChunk, at::kLong);
  const at::Tensor y = x.y.index_select(0, rows);
  LossBatch b;
  b.tokens.logp_new = logp.gather(-1, y.unsqueeze(-1)).squeeze(-1);
  b.tokens.logp_old = x.logp_old.index_select(0, rows);
  b.advantages = x.advantages.index_select(0, rows);
  b.total_sequences = kSequences;
  const Clock part;
  if (sis) {
    const at::Tensor idx = x.topk_idx.index_select(0, rows);
    b.tokens.topk_logp_old = x.topk_old.index_select(0, rows);
    b.tokens.topk_logp_new = logp.detach().gather(-1, idx);
    b.tokens.in_topk = (idx == y.unsqueeze(-1)).any(-1);
    b.tokens.vocab = kVocab;
  }
  auto r = policy_loss(b, o);
  if (!r.is_ok()) return -1;
  *loss_part = part.seconds();
  r->loss.backward();
  benchmark::DoNotOptimize(logits.grad().data_ptr());
  return clock.seconds();
}

// Each iteration is one chunk (4 of the 64 sequences, in rotation) twice, with and without SIS, in alternating
// order, so that drift in the machine's speed falls on both alike. The batch of 64 costs 16 chunks.
//
// Two overhead figures: end to end (with / without - 1, where the log-softmax's own run-to-run spread of a few
// percent is of the same size as any difference), and the timed part SIS changes (its top-K gather and the loss
// call with the test, less the loss call without it) as a share of the step without SIS.
void BM_GrpoLossFromLogits(benchmark::State& state) {
  const LogitInputs& x = logit_inputs();
  double with = 0, without = 0, part_with = 0, part_without = 0;
  int64_t i = 0;
  for (auto _ : state) {
    const int64_t first = (i % (kSequences / kChunk)) * kChunk;
    const bool sis_first = i % 2 == 1;
    double part_a = 0, part_b = 0;
    const double a = chunk_from_logits(x, first, sis_first, &part_a);
    const double b = chunk_from_logits(x, first, !sis_first, &part_b);
    if (a < 0 || b < 0) {
      state.SkipWithError("policy_loss failed");
      return;
    }
    with += sis_first ? a : b;
    without += sis_first ? b : a;
    part_with += sis_first ? part_a : part_b;
    part_without += sis_first ? part_b : part_a;
    ++i;
  }
  const double chunks_per_batch = static_cast<double>(kSequences / kChunk), n = static_cast<double>(i);
  state.counters["batch_s_without_sis"] = without / n * chunks_per_batch;
  state.counters["batch_s_with_sis"] = with / n * chunks_per_batch;
  state.counters["sis_overhead_pct"] = 100 * (with / without - 1);
  state.counters["sis_part_ms_per_batch"] = 1e3 * (part_with - part_without) / n * chunks_per_batch;
  state.counters["sis_part_pct"] = 100 * (part_with - part_without) / without;
}

BENCHMARK(BM_GrpoLoss)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_GrpoLossWithSis)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_GrpoLossFromLogits)->Unit(benchmark::kMillisecond)->Iterations(24);

}  // namespace

BENCHMARK_MAIN();
