// The pruning kernels' fast loops against the formulations they replace:
// SparseGPT's row loop against its column loop in libtorch calls (the same
// bits at one thread, and the row loop's bits at any thread count), Wanda's
// and magnitude's partial selection against a stable sort per row.

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "real/igsp/prune.h"

namespace clustertwin::real::igsp {
namespace {

const std::string kLoopLayer = "block0.fc1";

// Sets libtorch's (and OpenBLAS's) thread count for a scope.
class Threads {
 public:
  explicit Threads(int n) : before_(at::get_num_threads()) { at::set_num_threads(n); }
  ~Threads() { at::set_num_threads(before_); }

 private:
  int before_;
};

struct LoopCase {
  std::string name;
  int64_t rows, columns;
  PruneOptions options;
  bool fixed_mask = false;  // sparsegpt_with_mask with a random mask
};

std::vector<LoopCase> loop_cases() {
  PruneOptions unstructured;
  unstructured.sparsity = 0.6;
  PruneOptions small_blocks = unstructured;
  small_blocks.block_size = 48;  // 200 columns: blocks of 48, 48, 48, 48 and 8
  PruneOptions two_of_four;
  two_of_four.n = 2;
  two_of_four.m = 4;
  two_of_four.block_size = 64;
  PruneOptions in_double = unstructured;
  in_double.compute_dtype = at::kDouble;
  return {{"unstructured", 96, 256, unstructured},
          {"uneven_blocks", 40, 200, small_blocks},
          {"two_of_four", 64, 192, two_of_four},
          {"double", 48, 160, in_double},
          {"fixed_mask", 64, 128, unstructured, true}};
}

StatusOr<PruneResult> prune_case(const LoopCase& c, const at::Tensor& w, const at::Tensor& h, const at::Tensor& keep,
                                 PruneOptions::ColumnLoop loop) {
  PruneOptions o = c.options;
  o.column_loop = loop;
  return c.fixed_mask ? sparsegpt_with_mask(w, h, keep, o, kLoopLayer) : sparsegpt(w, h, o, kLoopLayer);
}

// libtorch's addr_ rounds each update as a product then a difference (the
// factor's rows are strided, so it takes its scalar loop), and so does the row
// loop: equal weights, masks and loss, not merely close ones, at one thread
// and at two (where both read the same two-thread factor). The weight is in
// the compute dtype, so the double case is compared in double.
TEST(PruneLoopsTest, RowLoopGivesTheBitsOfTheLibtorchCalls) {
  for (const LoopCase& c : loop_cases()) {
    for (int threads : {1, 2}) {
      const Threads scope(threads);
      at::manual_seed(11);
      const auto options = at::TensorOptions().dtype(c.options.compute_dtype);
      const at::Tensor x =
          at::randn({4 * c.columns, c.columns}, options).matmul(at::randn({c.columns, c.columns}, options));
      const at::Tensor h = x.t().matmul(x) * (2.0 / static_cast<double>(x.size(0)));
      const at::Tensor w = at::randn({c.rows, c.columns}, options);
      const at::Tensor keep = at::rand({c.rows, c.columns}) > 0.5;
      const StatusOr<PruneResult> calls = prune_case(c, w, h, keep, PruneOptions::ColumnLoop::kLibtorchCalls);
      const StatusOr<PruneResult> rows = prune_case(c, w, h, keep, PruneOptions::ColumnLoop::kRows);
      ASSERT_TRUE(calls.is_ok() && rows.is_ok()) << c.name;
      const std::string where = c.name + " at " + std::to_string(threads) + " threads";
      EXPECT_TRUE(at::equal(rows->mask, calls->mask)) << where;
      EXPECT_TRUE(at::equal(rows->weight, calls->weight)) << where;
      EXPECT_EQ(rows->loss, calls->loss) << where;
    }
  }
}

// The rule the partial selection replaced: per row (or N:M group), a stable
// ascending sort of the scores, the first k pruned.
at::Tensor stable_sort_keep(const at::Tensor& score, int64_t width, int64_t k) {
  const at::Tensor runs = score.reshape({-1, width});
  const at::Tensor order = std::get<1>(at::sort(runs, c10::optional<bool>(true), /*dim=*/-1));
  at::Tensor pruned = at::zeros(runs.sizes(), at::kBool);
  if (k > 0) pruned.scatter_(-1, order.narrow(-1, 0, k), true);
  return pruned.logical_not().view_as(score);
}

// Weights drawn from 7 magnitudes and norms from 3 values: every row's
// threshold falls in a tie, which the lower column wins.
TEST(PruneLoopsTest, WandaAndMagnitudePruneTiesInColumnOrder) {
  at::manual_seed(12);
  const at::Tensor w = (at::randint(-3, 4, {32, 120}) * 0.5).to(at::kFloat);
  const at::Tensor norms = at::randint(1, 4, {120}).to(at::kFloat);
  PruneOptions unstructured;
  unstructured.sparsity = 0.6;  // 72 of 120 per row
  PruneOptions two_of_four;
  two_of_four.n = 2;
  two_of_four.m = 4;
  for (const auto& [o, width, k] : {std::tuple{unstructured, 120, 72}, std::tuple{two_of_four, 4, 2}}) {
    const PruneResult by_magnitude = magnitude(w, o, kLoopLayer).value();
    EXPECT_TRUE(at::equal(by_magnitude.mask, stable_sort_keep(w.abs(), width, k))) << "m " << o.m;
    const PruneResult by_wanda = wanda(w, norms, o, kLoopLayer).value();
    EXPECT_TRUE(at::equal(by_wanda.mask, stable_sort_keep(w.abs() * norms, width, k))) << "m " << o.m;
    EXPECT_TRUE(at::equal(by_wanda.weight, w.masked_fill(by_wanda.mask.logical_not(), 0))) << "m " << o.m;
  }
}

}  // namespace
}  // namespace clustertwin::real::igsp
