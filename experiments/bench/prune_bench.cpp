// IGSP's pruning kernels on one 1024 x 1024 linear layer at 60% sparsity, with
// a Hessian from 128 x 256 = 32768 calibration tokens.
//
// Floating-point operations counted per run (c = columns = 1024, r = rows = 1024,
// N = tokens, B = block size = 128):
//   Hessian accumulation   2 N c^2                        (X^T X as a full GEMM)
//   inverse factor         4 c^3 / 3                      (Cholesky c^3/3, Cholesky-inverse 2c^3/3, Cholesky c^3/3)
//   lazy block updates     sum over blocks 2 r B (c - end) = r c (c - B)
//   in-block updates       sum over columns 2 r (B - i)    = r c (B + 1)
// The GFLOP counters (shown as GFLOP=x/s) divide those counts by the measured time; BM_Matmul is
// the machine's GEMM rate for comparison. BM_InverseFactor and BM_LazyUpdates
// time SparseGPT's two dense phases alone, so that BM_SparseGpt's time minus
// theirs is the column-by-column loop.
//
// Each kernel runs at 1 and 2 threads (the argument), and beside it the same
// operation in plain libtorch calls as a reference point (the *Libtorch
// benchmarks): SparseGPT with its column loop as the reference writes it, a
// few libtorch calls per column; Wanda and magnitude as a stable sort of each
// row and a scatter. items_per_second counts the layer's weights.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <tuple>

#include "common/check.h"
#include "real/igsp/prune.h"

namespace clustertwin::real::igsp {
namespace {

constexpr int64_t kRows = 1024, kColumns = 1024;
constexpr int64_t kSequences = 128, kSequenceLength = 256, kTokens = kSequences * kSequenceLength;
constexpr int kBlock = 128;
constexpr double kSparsity = 0.6;

constexpr double kHessianFlop = 2.0 * kTokens * kColumns * kColumns;
constexpr double kFactorFlop = 4.0 * kColumns * kColumns * kColumns / 3;
constexpr double kLazyFlop = 1.0 * kRows * kColumns * (kColumns - kBlock);
constexpr double kInBlockFlop = 1.0 * kRows * kColumns * (kBlock + 1);

// Calibration inputs [tokens, columns], correlated as a model's (X = Z A with a
// random mixing A), the layer's weight and its Hessian; built once, seeded.
struct Layer {
  at::Tensor inputs, weight, hessian;
};

const Layer& layer() {
  static const Layer built = [] {
    at::manual_seed(0);
    Layer l;
    const at::Tensor mixing = at::randn({kColumns, kColumns}) / std::sqrt(static_cast<double>(kColumns));
    l.inputs = at::randn({kTokens, kColumns}).matmul(mixing);
    l.weight = at::randn({kRows, kColumns});
    HessianAccumulator hessian("bench", kColumns);
    for (int64_t s = 0; s < kSequences; ++s) {
      const Status added = hessian.add(l.inputs.narrow(0, s * kSequenceLength, kSequenceLength));
      CT_CHECK(added.is_ok()) << added.message();
    }
    l.hessian = hessian.hessian();
    return l;
  }();
  return built;
}

void set_gflops(benchmark::State& state, double flop) {
  state.counters["GFLOP"] = benchmark::Counter(flop / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// One sequence of 256 tokens at a time, as a pruner fed by a model's forward passes.
void BM_HessianAccumulation(benchmark::State& state) {
  const at::Tensor& inputs = layer().inputs;
  for (auto _ : state) {
    HessianAccumulator hessian("bench", kColumns);
    for (int64_t s = 0; s < kSequences; ++s)
      benchmark::DoNotOptimize(hessian.add(inputs.narrow(0, s * kSequenceLength, kSequenceLength)).is_ok());
    benchmark::DoNotOptimize(hessian.hessian().data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kTokens);
  set_gflops(state, kHessianFlop);
}

// Sets libtorch's (and OpenBLAS's) thread count to the benchmark's argument for its run.
class Threads {
 public:
  explicit Threads(const benchmark::State& state) : before_(at::get_num_threads()) {
    at::set_num_threads(static_cast<int>(state.range(0)));
  }
  ~Threads() { at::set_num_threads(before_); }

 private:
  int before_;
};

void run_sparsegpt(benchmark::State& state, PruneOptions::ColumnLoop loop) {
  const Threads threads(state);
  PruneOptions options;
  options.sparsity = kSparsity;
  options.block_size = kBlock;
  options.column_loop = loop;
  double damping = 0;
  for (auto _ : state) {
    StatusOr<PruneResult> result = sparsegpt(layer().weight, layer().hessian, options, "bench");
    if (!result.is_ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    damping = result->damping;
    benchmark::DoNotOptimize(result->weight.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kRows * kColumns);
  set_gflops(state, kFactorFlop + kLazyFlop + kInBlockFlop);
  state.counters["damping"] = damping;
}

void BM_SparseGpt(benchmark::State& state) {
  run_sparsegpt(state, PruneOptions::ColumnLoop::kRows);
}

// The reference point: the column loop in libtorch calls (the same bits).
void BM_SparseGptLibtorch(benchmark::State& state) {
  run_sparsegpt(state, PruneOptions::ColumnLoop::kLibtorchCalls);
}

// Steps 2-3 alone: damp, Cholesky, Cholesky-inverse, upper Cholesky.
void BM_InverseFactor(benchmark::State& state) {
  const Threads threads(state);
  const at::Tensor& h = layer().hessian;
  for (auto _ : state) {
    const at::Tensor damped = h + 0.01 * h.diagonal().mean() * at::eye(kColumns);
    const at::Tensor upper = at::linalg_cholesky(at::cholesky_inverse(at::linalg_cholesky(damped)), /*upper=*/true);
    benchmark::DoNotOptimize(upper.data_ptr());
  }
  set_gflops(state, kFactorFlop);
}

// The lazy updates alone: W[:, end:] -= Err x H_inv[block, end:] for every block.
void BM_LazyUpdates(benchmark::State& state) {
  const Threads threads(state);
  const at::Tensor h_inv = at::randn({kColumns, kColumns}).triu();
  const at::Tensor err = at::randn({kRows, kBlock});
  for (auto _ : state) {
    at::Tensor w = layer().weight.clone();
    for (int64_t end = kBlock; end < kColumns; end += kBlock) {
      w.narrow(1, end, kColumns - end)
          .addmm_(err, h_inv.narrow(0, end - kBlock, kBlock).narrow(1, end, kColumns - end), 1, -1);
    }
    benchmark::DoNotOptimize(w.data_ptr());
  }
  set_gflops(state, kLazyFlop);
}

PruneOptions at_sparsity() {
  PruneOptions options;
  options.sparsity = kSparsity;
  return options;
}

void BM_Wanda(benchmark::State& state) {
  const Threads threads(state);
  const at::Tensor norms = layer().inputs.norm(2, {0});
  for (auto _ : state)
    benchmark::DoNotOptimize(wanda(layer().weight, norms, at_sparsity(), "bench")->weight.data_ptr());
  state.SetItemsProcessed(state.iterations() * kRows * kColumns);
}

void BM_Magnitude(benchmark::State& state) {
  const Threads threads(state);
  for (auto _ : state)
    benchmark::DoNotOptimize(magnitude(layer().weight, at_sparsity(), "bench")->weight.data_ptr());
  state.SetItemsProcessed(state.iterations() * kRows * kColumns);
}

// The reference point for both: each row's scores sorted (stably, so ties
// go in column order, as the kernels break them), the lowest scattered into
// the mask, the weight masked.
at::Tensor prune_by_sorting(const at::Tensor& weight, const at::Tensor& score) {
  const int64_t k = pruned_count(kSparsity, kColumns);
  const at::Tensor order = std::get<1>(at::sort(score, c10::optional<bool>(true), /*dim=*/-1));
  const at::Tensor pruned =
      at::zeros(score.sizes(), score.options().dtype(at::kBool)).scatter_(-1, order.narrow(-1, 0, k), true);
  return weight.masked_fill(pruned, 0);
}

void BM_WandaLibtorch(benchmark::State& state) {
  const Threads threads(state);
  const at::Tensor norms = layer().inputs.norm(2, {0});
  for (auto _ : state)
    benchmark::DoNotOptimize(prune_by_sorting(layer().weight, layer().weight.abs() * norms).data_ptr());
  state.SetItemsProcessed(state.iterations() * kRows * kColumns);
}

void BM_MagnitudeLibtorch(benchmark::State& state) {
  const Threads threads(state);
  for (auto _ : state)
    benchmark::DoNotOptimize(prune_by_sorting(layer().weight, layer().weight.abs()).data_ptr());
  state.SetItemsProcessed(state.iterations() * kRows * kColumns);
}

// The machine's GEMM rate: 1024 x 1024 x 1024, 2 n^3 flop.
void BM_Matmul(benchmark::State& state) {
  const Threads threads(state);
  const at::Tensor a = at::randn({1024, 1024}), b = at::randn({1024, 1024});
  for (auto _ : state)
    benchmark::DoNotOptimize(at::matmul(a, b).data_ptr());
  set_gflops(state, 2.0 * 1024 * 1024 * 1024);
}

// The argument is the thread count.
BENCHMARK(BM_Matmul)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HessianAccumulation)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SparseGpt)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SparseGptLibtorch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InverseFactor)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LazyUpdates)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Wanda)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WandaLibtorch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Magnitude)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MagnitudeLibtorch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace clustertwin::real::igsp

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // The kernels set their thread count from their argument; BM_HessianAccumulation
  // runs at libtorch's default (OMP_NUM_THREADS when set).
  benchmark::AddCustomContext("torch_threads", std::to_string(at::get_num_threads()) + " (libtorch's default)");
  (void)clustertwin::real::igsp::layer();  // built before any timing: its 69 GFLOP of Hessian would land in the first
                                           // benchmark to ask
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
