#include "real/igsp/selection.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace clustertwin::real::igsp {
namespace {

// The score's bits with the sign bit flipped for positives and every bit for
// negatives: unsigned order is then the order of the values, and -0 (made +0
// first) is the same key as +0.
template <typename T>
SelectionKey<T> key_of(T score) {
  using Key = SelectionKey<T>;
  if (score == 0) score = 0;
  Key bits;
  std::memcpy(&bits, &score, sizeof bits);
  constexpr Key kSign = Key{1} << (8 * sizeof(Key) - 1);
  return (bits & kSign) ? ~bits : (bits | kSign);
}

}  // namespace

template <typename T>
void mark_lowest(const T* scores, int64_t n, int64_t k, bool* pruned, std::vector<SelectionKey<T>>& scratch) {
  using Key = SelectionKey<T>;
  if (k <= 0 || k >= n) {
    std::fill(pruned, pruned + n, k > 0);
    return;
  }
  // A radix selection of the k-th lowest key, a byte at a time from the top:
  // count the candidates' values of the byte, keep those in the bucket where
  // the k-th falls. O(n) where a sort would be O(n log n), and a few times
  // faster than std::nth_element on rows of a thousand.
  scratch.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    scratch[static_cast<size_t>(i)] = key_of(scores[i]);
  size_t candidates = static_cast<size_t>(n);
  int64_t rank = k - 1;  // of the k-th lowest among the candidates
  for (int shift = 8 * static_cast<int>(sizeof(Key)) - 8; shift >= 0; shift -= 8) {
    std::array<int64_t, 256> count{};
    for (size_t c = 0; c < candidates; ++c)
      ++count[(scratch[c] >> shift) & 0xff];
    Key bucket = 0;
    while (rank >= count[bucket])
      rank -= count[bucket++];
    size_t kept = 0;
    for (size_t c = 0; c < candidates; ++c) {
      if (((scratch[c] >> shift) & 0xff) == bucket) scratch[kept++] = scratch[c];
    }
    candidates = kept;
  }
  // Every candidate left is the k-th lowest key; `rank` of them come before it.
  const Key threshold = scratch[0];
  int64_t ties_left = rank + 1;
  for (int64_t i = 0; i < n; ++i) {
    const Key key = key_of(scores[i]);
    const bool tie = key == threshold && ties_left > 0;
    ties_left -= tie;
    pruned[i] = key < threshold || tie;
  }
}

template void mark_lowest<float>(const float*, int64_t, int64_t, bool*, std::vector<uint32_t>&);
template void mark_lowest<double>(const double*, int64_t, int64_t, bool*, std::vector<uint64_t>&);

}  // namespace clustertwin::real::igsp
