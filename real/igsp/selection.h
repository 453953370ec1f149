#pragma once

// Choosing which weights to prune: the k lowest scores of a run of contiguous
// values, ties broken by position. Plain C++ on raw arrays (no libtorch), so
// the pruning kernels call it per row, per block or per N:M group without a
// tensor operation each time.

#include <cstdint>
#include <type_traits>
#include <vector>

namespace clustertwin::real::igsp {

/// An unsigned integer in the order of a score's value (mark_lowest's working space).
template <typename T>
using SelectionKey = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

/// Sets pruned[i] for every i in [0, n): true for the k lowest of scores[0, n),
/// false for the rest. Equal scores (-0 and +0 among them) are pruned in index
/// order, the lower index first, so exactly min(k, n) entries are true whatever
/// the ties: the same entries a stable ascending sort puts first. `scratch` is
/// working space that callers reuse across calls to avoid allocating. Scores
/// must not be NaN.
template <typename T>
void mark_lowest(const T* scores, int64_t n, int64_t k, bool* pruned, std::vector<SelectionKey<T>>& scratch);

extern template void mark_lowest<float>(const float*, int64_t, int64_t, bool*, std::vector<uint32_t>&);
extern template void mark_lowest<double>(const double*, int64_t, int64_t, bool*, std::vector<uint64_t>&);

}  // namespace clustertwin::real::igsp
