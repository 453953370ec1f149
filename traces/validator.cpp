#include "traces/validator.h"

#include <cmath>
#include <limits>
#include <set>

#include "traces/trace_reader.h"

namespace clustertwin::traces {
namespace {

Status validate(TraceReader& reader, ValidationStats* stats) {
  ValidationStats local;
  ValidationStats& out = stats != nullptr ? *stats : local;
  out = ValidationStats();
  // The metadata may follow the events in files we did not write, so rank and
  // stream bounds are checked against the largest values seen, at the end.
  int64_t max_rank = -1, max_rank_index = -1, max_stream = -1, max_stream_index = -1;
  double first_ts = std::numeric_limits<double>::infinity(), last_end = 0;
  std::set<int64_t> ranks;
  Event e;
  const std::string& name = reader.name();
  while (reader.next(&e)) {
    const std::string where = name + ": event " + std::to_string(reader.event_index()) + ": ";
    if (e.name.empty()) return Status::invalid_argument(where + "field 'name': must not be empty");
    if (!std::isfinite(e.end_us())) {
      return Status::invalid_argument(where + "field 'dur': ts + dur is not a finite time");
    }
    if (e.rank > max_rank) max_rank = e.rank, max_rank_index = reader.event_index();
    if (e.stream > max_stream) max_stream = e.stream, max_stream_index = reader.event_index();
    ranks.insert(e.rank);
    first_ts = std::min(first_ts, e.ts_us);
    last_end = std::max(last_end, e.end_us());
    ++out.events;
  }
  if (!reader.status().is_ok()) return reader.status();
  if (!reader.has_metadata()) return Status::invalid_argument(name + ": top level: missing field 'metadata'");
  const Metadata& m = reader.metadata();
  if (max_rank >= m.world_size) {
    return Status::invalid_argument(
        name + ": event " + std::to_string(max_rank_index) + ": field 'pid': " + std::to_string(max_rank) +
        " is not a rank of this trace (metadata world_size " + std::to_string(m.world_size) + ")");
  }
  if (!m.streams.empty() && max_stream >= static_cast<int64_t>(m.streams.size())) {
    return Status::invalid_argument(
        name + ": event " + std::to_string(max_stream_index) + ": field 'tid': " + std::to_string(max_stream) +
        " names no stream (metadata streams lists " + std::to_string(m.streams.size()) + ")");
  }
  out.metadata = m;
  out.ranks_seen = static_cast<int64_t>(ranks.size());
  out.span_us = out.events > 0 ? last_end - first_ts : 0;
  return Status::ok();
}

}  // namespace

Status validate_trace(const std::string& path, ValidationStats* stats) {
  auto reader = TraceReader::open(path);
  if (!reader.is_ok()) return reader.status();
  return validate(**reader, stats);
}

Status validate_trace_text(std::string_view text, const std::string& name, ValidationStats* stats) {
  auto reader = TraceReader::from_text(text, name);
  return validate(*reader, stats);
}

}  // namespace clustertwin::traces
