#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "traces/event.h"

namespace clustertwin::traces {

/// Duration statistics of the events that share a cost key (or, lacking
/// one, a name). Percentiles interpolate linearly between order statistics.
struct KeySummary {
  std::string key;
  int64_t count = 0;
  double total_us = 0;
  double median_us = 0;
  double p10_us = 0;
  double p90_us = 0;
};

/// How long one rank's stream was busy: the union of its events' intervals,
/// so nested or overlapping events are not counted twice.
struct StreamSummary {
  int64_t rank = 0;
  int64_t stream = 0;
  std::string stream_name;
  double busy_us = 0;
};

/// Communication of one rank. Exposed communication is the time some `comm`
/// event of the rank runs while no `compute` event of the rank does: what
/// overlap failed to hide.
struct RankSummary {
  int64_t rank = 0;
  double comm_us = 0;
  double exposed_comm_us = 0;
};

struct TraceSummary {
  Metadata metadata;
  int64_t events = 0;
  double span_us = 0;                  // last end minus first start, over all ranks
  std::vector<KeySummary> keys;        // by total time, largest first
  std::vector<StreamSummary> streams;  // by rank, then stream
  std::vector<RankSummary> ranks;      // by rank
  double category_total_us[std::size(kAllCategories)] = {};
};

/// Reads `path` (streaming) and summarises it. Errors are those of TraceReader.
StatusOr<TraceSummary> summarize_trace(const std::string& path);

/// Summarises events already in memory.
TraceSummary summarize_events(const Metadata& metadata, const std::vector<Event>& events);

/// A human-readable report (tables).
std::string format_summary(const TraceSummary& summary);
/// The same as one JSON object.
std::string summary_to_json(const TraceSummary& summary);

/// The p-th percentile (0..100) of sorted values, interpolating linearly.
double percentile_of_sorted(const std::vector<double>& sorted, double p);

/// Total length of the union of [start, end) intervals (sorted in place).
double union_length(std::vector<std::pair<double, double>>* intervals);

}  // namespace clustertwin::traces
