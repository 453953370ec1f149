#include "traces/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

#include "traces/intervals.h"
#include "traces/json_text.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace clustertwin::traces {
namespace {

using Intervals = traces::Intervals;

class SummaryBuilder {
 public:
  void add(const Event& e) {
    ++events_;
    first_ = std::min(first_, e.ts_us);
    last_ = std::max(last_, e.end_us());
    const std::string& key = e.cost_key.empty() ? e.name : e.cost_key;
    auto it = durations_.find(key);
    if (it == durations_.end()) it = durations_.emplace(key, std::vector<double>()).first;
    it->second.push_back(e.dur_us);
    streams_[{e.rank, e.stream}].emplace_back(e.ts_us, e.end_us());
    if (e.category == Category::kComm) comm_[e.rank].emplace_back(e.ts_us, e.end_us());
    if (e.category == Category::kCompute) compute_[e.rank].emplace_back(e.ts_us, e.end_us());
    category_[static_cast<size_t>(e.category)] += e.dur_us;
  }

  TraceSummary finish(const Metadata& metadata) {
    TraceSummary s;
    s.metadata = metadata;
    s.events = events_;
    s.span_us = events_ > 0 ? last_ - first_ : 0;
    for (auto& [key, d] : durations_) {
      std::sort(d.begin(), d.end());
      KeySummary k;
      k.key = key;
      k.count = static_cast<int64_t>(d.size());
      for (double x : d)
        k.total_us += x;
      k.median_us = percentile_of_sorted(d, 50);
      k.p10_us = percentile_of_sorted(d, 10);
      k.p90_us = percentile_of_sorted(d, 90);
      s.keys.push_back(std::move(k));
    }
    std::sort(s.keys.begin(), s.keys.end(), [](const KeySummary& a, const KeySummary& b) {
      return a.total_us != b.total_us ? a.total_us > b.total_us : a.key < b.key;
    });
    for (auto& [id, intervals] : streams_) {
      StreamSummary st;
      st.rank = id.first;
      st.stream = id.second;
      if (id.second < static_cast<int64_t>(metadata.streams.size())) st.stream_name = metadata.streams[id.second];
      st.busy_us = union_length(&intervals);
      s.streams.push_back(std::move(st));
    }
    std::map<int64_t, bool> ranks;
    for (const auto& [id, unused] : streams_)
      ranks[id.first] = true;
    for (const auto& [rank, unused] : ranks) {
      RankSummary r;
      r.rank = rank;
      Intervals& comm = comm_[rank];
      Intervals& compute = compute_[rank];
      merge_intervals(&comm);
      merge_intervals(&compute);
      r.comm_us = intervals_length(comm);
      r.exposed_comm_us = r.comm_us - overlap_length(comm, compute);
      s.ranks.push_back(r);
    }
    std::copy(std::begin(category_), std::end(category_), std::begin(s.category_total_us));
    return s;
  }

 private:
  int64_t events_ = 0;
  double first_ = std::numeric_limits<double>::infinity();
  double last_ = 0;
  std::unordered_map<std::string, std::vector<double>> durations_;
  std::map<std::pair<int64_t, int64_t>, Intervals> streams_;
  std::map<int64_t, Intervals> comm_;
  std::map<int64_t, Intervals> compute_;
  double category_[std::size(kAllCategories)] = {};
};

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace

double percentile_of_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double position = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(position));
  const size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

double union_length(std::vector<std::pair<double, double>>* intervals) {
  merge_intervals(intervals);
  return intervals_length(*intervals);
}

TraceSummary summarize_events(const Metadata& metadata, const std::vector<Event>& events) {
  SummaryBuilder builder;
  for (const Event& e : events)
    builder.add(e);
  return builder.finish(metadata);
}

StatusOr<TraceSummary> summarize_trace(const std::string& path) {
  auto reader = TraceReader::open(path);
  if (!reader.is_ok()) return reader.status();
  SummaryBuilder builder;
  Event e;
  while ((*reader)->next(&e))
    builder.add(e);
  if (!(*reader)->status().is_ok()) return (*reader)->status();
  if (!(*reader)->has_metadata()) return Status::invalid_argument(path + ": top level: missing field 'metadata'");
  return builder.finish((*reader)->metadata());
}

std::string format_summary(const TraceSummary& s) {
  const Metadata& m = s.metadata;
  std::string out;
  char line[512];
  out += "source " + std::string(source_name(m.source)) + ", system " + (m.system.empty() ? "-" : m.system) +
         ", variant " + (m.variant.empty() ? "-" : m.variant) + ", world size " + std::to_string(m.world_size) +
         ", hardware " + (m.hardware.empty() ? "-" : m.hardware) + ", model " + (m.model.empty() ? "-" : m.model) +
         (m.seed ? ", seed " + std::to_string(*m.seed) : std::string()) + "\n";
  out += std::to_string(s.events) + " events over " + fixed(s.span_us / 1000.0, 3) + " ms\n\n";

  std::snprintf(line, sizeof line, "%-40s %8s %12s %12s %12s %12s\n", "cost key", "count", "total ms", "median us",
                "p10 us", "p90 us");
  out += line;
  for (const KeySummary& k : s.keys) {
    const std::string key = k.key.size() > 40 ? k.key.substr(0, 37) + "..." : k.key;
    std::snprintf(line, sizeof line, "%-40s %8lld %12.3f %12.3f %12.3f %12.3f\n", key.c_str(),
                  static_cast<long long>(k.count), k.total_us / 1000.0, k.median_us, k.p10_us, k.p90_us);
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof line, "%6s %-20s %12s %8s\n", "rank", "stream", "busy ms", "busy %");
  out += line;
  for (const StreamSummary& st : s.streams) {
    const std::string stream = st.stream_name.empty() ? std::to_string(st.stream) : st.stream_name;
    const double share = s.span_us > 0 ? 100.0 * st.busy_us / s.span_us : 0;
    std::snprintf(line, sizeof line, "%6lld %-20s %12.3f %8.1f\n", static_cast<long long>(st.rank), stream.c_str(),
                  st.busy_us / 1000.0, share);
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof line, "%6s %12s %18s\n", "rank", "comm ms", "exposed comm ms");
  out += line;
  for (const RankSummary& r : s.ranks) {
    std::snprintf(line, sizeof line, "%6lld %12.3f %18.3f\n", static_cast<long long>(r.rank), r.comm_us / 1000.0,
                  r.exposed_comm_us / 1000.0);
    out += line;
  }
  return out;
}

// By hand, through the trace writer's helpers (traces/json_text.h): the summary
// embeds the trace's header as its writer prints it, and traces/ has no
// nlohmann-json (the fuzz build).
std::string summary_to_json(const TraceSummary& s) {
  std::string out = "{\"metadata\":" + metadata_to_json(s.metadata) + ",\"events\":";
  append_json_int(&out, s.events);
  out += ",\"span_us\":";
  append_json_number(&out, s.span_us);
  out += ",\"category_total_us\":{";
  for (size_t c = 0; c < std::size(kAllCategories); ++c) {
    if (c > 0) out += ",";
    append_json_string(&out, category_name(kAllCategories[c]));
    out += ":";
    append_json_number(&out, s.category_total_us[c]);
  }
  out += "},\"keys\":[";
  for (size_t i = 0; i < s.keys.size(); ++i) {
    const KeySummary& k = s.keys[i];
    out += i > 0 ? ",{\"key\":" : "{\"key\":";
    append_json_string(&out, k.key);
    out += ",\"count\":";
    append_json_int(&out, k.count);
    out += ",\"total_us\":";
    append_json_number(&out, k.total_us);
    out += ",\"median_us\":";
    append_json_number(&out, k.median_us);
    out += ",\"p10_us\":";
    append_json_number(&out, k.p10_us);
    out += ",\"p90_us\":";
    append_json_number(&out, k.p90_us);
    out += "}";
  }
  out += "],\"streams\":[";
  for (size_t i = 0; i < s.streams.size(); ++i) {
    const StreamSummary& st = s.streams[i];
    out += i > 0 ? ",{\"rank\":" : "{\"rank\":";
    append_json_int(&out, st.rank);
    out += ",\"stream\":";
    append_json_int(&out, st.stream);
    out += ",\"stream_name\":";
    append_json_string(&out, st.stream_name);
    out += ",\"busy_us\":";
    append_json_number(&out, st.busy_us);
    out += "}";
  }
  out += "],\"ranks\":[";
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const RankSummary& r = s.ranks[i];
    out += i > 0 ? ",{\"rank\":" : "{\"rank\":";
    append_json_int(&out, r.rank);
    out += ",\"comm_us\":";
    append_json_number(&out, r.comm_us);
    out += ",\"exposed_comm_us\":";
    append_json_number(&out, r.exposed_comm_us);
    out += "}";
  }
  out += "]}";
  return out;
}

}  // namespace clustertwin::traces
