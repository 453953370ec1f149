// Compiled with -ffp-contract=off (real/igsp/CMakeLists.txt): the compiler may
// not fuse an update's product and difference into one multiply-add of its own
// accord, on a target that has one.

#include "real/igsp/sparsegpt_rows.h"

#include <algorithm>
#include <vector>

#include "real/igsp/selection.h"

namespace clustertwin::real::igsp {

template <typename T>
void sparsegpt_block_rows(const SparseGptBlockRows<T>& b, int64_t row_begin, int64_t row_end) {
  const int64_t count = b.count;
  std::vector<T> group_scores(static_cast<size_t>(std::max(b.m, 0)));
  std::vector<SelectionKey<T>> scratch;
  for (int64_t r = row_begin; r < row_end; ++r) {
    T* __restrict w = b.weight + r * b.weight_stride;
    bool* pruned = b.pruned + r * b.pruned_stride;
    T* err = b.err + r * b.err_stride;
    for (int64_t i = 0; i < count; ++i) {
      const T* __restrict h = b.h_inv + i * b.h_inv_stride;
      if (b.m > 0 && i % b.m == 0) {
        for (int g = 0; g < b.m; ++g) {
          const T d = b.h_inv[(i + g) * (b.h_inv_stride + 1)];
          group_scores[static_cast<size_t>(g)] = (w[i + g] * w[i + g]) / (d * d);
        }
        mark_lowest(group_scores.data(), b.m, b.n, pruned + i, scratch);
      }
      const T e = w[i] * static_cast<T>(pruned[i]) / h[i];
      err[i] = e;
      if (e == 0) continue;  // a kept column changes nothing
      // Column i itself is not updated: it is pruned (zeroed below) or kept.
      for (int64_t j = i + 1; j < count; ++j)
        w[j] = w[j] - e * h[j];
    }
    for (int64_t i = 0; i < count; ++i) {
      if (pruned[i]) w[i] = 0;
    }
  }
}

template void sparsegpt_block_rows<float>(const SparseGptBlockRows<float>&, int64_t, int64_t);
template void sparsegpt_block_rows<double>(const SparseGptBlockRows<double>&, int64_t, int64_t);

}  // namespace clustertwin::real::igsp
