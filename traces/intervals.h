#pragma once

#include <utility>
#include <vector>

namespace clustertwin::traces {

/// Half-open time intervals [start, end), as busy time and overlap are
/// computed from events (trace summaries, the twin's metrics).
using Intervals = std::vector<std::pair<double, double>>;

/// Sorts and merges in place: the result is disjoint and ordered.
void merge_intervals(Intervals* intervals);
/// Total length of merged intervals.
double intervals_length(const Intervals& merged);
/// Length of the intersection of two merged interval lists.
double overlap_length(const Intervals& a, const Intervals& b);
/// Merged copy of `intervals` clipped to [lo, hi).
Intervals clip_and_merge(Intervals intervals, double lo, double hi);

}  // namespace clustertwin::traces
