#include "traces/intervals.h"

#include <algorithm>

namespace clustertwin::traces {

void merge_intervals(Intervals* intervals) {
  std::sort(intervals->begin(), intervals->end());
  size_t out = 0;
  for (size_t i = 0; i < intervals->size(); ++i) {
    auto [start, end] = (*intervals)[i];
    if (end <= start) continue;
    if (out > 0 && start <= (*intervals)[out - 1].second) {
      (*intervals)[out - 1].second = std::max((*intervals)[out - 1].second, end);
    } else {
      (*intervals)[out++] = {start, end};
    }
  }
  intervals->resize(out);
}

double intervals_length(const Intervals& merged) {
  double total = 0;
  for (const auto& [s, e] : merged)
    total += e - s;
  return total;
}

double overlap_length(const Intervals& a, const Intervals& b) {
  double total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first);
    const double hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

Intervals clip_and_merge(Intervals intervals, double lo, double hi) {
  for (auto& [s, e] : intervals) {
    s = std::clamp(s, lo, hi);
    e = std::clamp(e, lo, hi);
  }
  merge_intervals(&intervals);
  return intervals;
}

}  // namespace clustertwin::traces
