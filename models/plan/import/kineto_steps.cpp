#include "models/plan/import/kineto_steps.h"

#include <algorithm>

namespace clustertwin::models::kineto_detail {
namespace {

using traces::Category;
using traces::Event;

bool on_device(Category c) {
  return c == Category::kCompute || c == Category::kComm || c == Category::kCopy;
}

bool is_step_marker(const Event& e) {
  return e.category == Category::kHost && e.name.rfind("ProfilerStep#", 0) == 0;
}

}  // namespace

std::string stream_name(const traces::Trace& trace, int64_t stream) {
  return stream >= 0 && stream < static_cast<int64_t>(trace.metadata.streams.size())
             ? trace.metadata.streams[static_cast<size_t>(stream)]
             : "stream " + std::to_string(stream);
}

std::string key_of(const Event& e) {
  return e.cost_key.empty() ? e.name : e.cost_key;
}

bool is_point_to_point(const Event& e) {
  return e.category == Category::kComm && (e.collective == "send" || e.collective == "recv");
}

namespace {

// Each rank's profiler step markers.
struct StepMarkers {
  std::map<int64_t, std::vector<double>> starts;         // rank -> the steps' starts, in order
  std::map<int64_t, std::map<double, double>> step_end;  // rank -> start -> the step's end
  std::map<int64_t, std::map<double, double>> own_end;   // rank -> start -> the marker's own end
};

// Step markers per rank, by start.
// Kineto marks a step twice, on the host thread and on the GPU's timeline (gpu_user_annotation): a step
// starts at the earliest marker of its name.
// The host thread's marker starts first; its end is where the host left the step.
StepMarkers step_markers(const std::vector<Event>& events) {
  std::map<int64_t, std::map<std::string, std::pair<double, double>>> marker_of;  // rank -> name -> start, end
  for (const Event& e : events) {
    if (!is_step_marker(e)) continue;
    auto [it, fresh] = marker_of[e.rank].try_emplace(e.name, e.ts_us, e.end_us());
    if (!fresh && e.ts_us < it->second.first) it->second = {e.ts_us, e.end_us()};
  }
  StepMarkers out;
  for (const auto& [rank, named] : marker_of) {
    for (const auto& [name, span] : named) {
      out.starts[rank].push_back(span.first);
      out.step_end[rank][span.first] = span.second;
      out.own_end[rank][span.first] = span.second;
    }
    std::sort(out.starts[rank].begin(), out.starts[rank].end());
    // A step's host time runs to the next step's start. The last step's next start is not in the trace (its
    // marker ends where the profiler stopped): its end is estimated as its marker's end plus the gap the step
    // before it left between its marker's end and the next start (the loop's own time between steps), so that
    // a trace whose measured window holds only its last step still prices that step's host tail, and a tail
    // sampled there is not short by the gap. With one step, its marker's end is all there is.
    const std::vector<double>& starts = out.starts[rank];
    for (size_t i = 0; i + 1 < starts.size(); ++i)
      out.step_end[rank][starts[i]] = starts[i + 1];
    if (starts.size() > 1) {
      const double gap = std::max(0.0, starts.back() - out.own_end[rank][starts[starts.size() - 2]]);
      out.step_end[rank][starts.back()] = out.own_end[rank][starts.back()] + gap;
    }
  }
  return out;
}

// Device events per rank and step (keyed by the step's marker index, or 0 without markers).
std::map<int64_t, std::map<int, StepEvents>> device_events_by_step(const std::vector<Event>& events,
                                                                   const StepMarkers& markers) {
  std::map<int64_t, std::map<int, StepEvents>> ranks;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!on_device(e.category)) continue;
    int step = 0;
    double start = 0;
    auto m = markers.starts.find(e.rank);
    if (m != markers.starts.end()) {
      // A device event belongs to the step that launched it (the launch link), else to the one it ran in.
      const auto it = std::upper_bound(m->second.begin(), m->second.end(), e.host_ts_us.value_or(e.ts_us));
      if (it == m->second.begin()) continue;  // before the first marker: the profiler's warm-up
      step = static_cast<int>(it - m->second.begin()) - 1;
      start = *(it - 1);
    }
    auto [s, fresh] = ranks[e.rank].try_emplace(step);
    // Without markers the step starts with its first launch (or device event).
    const double first = std::min(e.ts_us, e.host_ts_us.value_or(e.ts_us));
    if (m == markers.starts.end()) start = fresh ? first : std::min(s->second.start_us, first);
    s->second.start_us = start;
    if (m != markers.starts.end()) {
      const std::map<double, double>& ends = markers.step_end.at(e.rank);
      auto end = ends.find(start);
      if (end != ends.end()) s->second.end_us = end->second;
      s->second.marker_end_us = markers.own_end.at(e.rank).at(start);
    }
    s->second.last_end_us = std::max(s->second.last_end_us, e.end_us());
    s->second.by_stream[e.stream].push_back(i);
  }
  for (auto& [rank, steps] : ranks) {
    for (auto& [step, s] : steps) {
      for (auto& [stream, list] : s.by_stream) {
        std::stable_sort(list.begin(), list.end(),
                         [&](size_t a, size_t b) { return events[a].ts_us < events[b].ts_us; });
      }
    }
  }
  return ranks;
}

}  // namespace

StatusOr<RankSteps> steps_of(const traces::Trace& trace, const std::string& path) {
  std::map<int64_t, std::map<int, StepEvents>> ranks = device_events_by_step(trace.events, step_markers(trace.events));
  if (ranks.empty()) {
    return Status::invalid_argument(path + ": no device events (compute, comm, copy) in profiler steps to derive a " +
                                    "plan from");
  }
  // Steps are numbered from 0 in order on each rank; every rank has as many.
  RankSteps numbered;
  for (auto& [rank, steps] : ranks) {
    int n = 0;
    for (auto& [marker, s] : steps)
      numbered[rank][n++] = std::move(s);
  }
  const int64_t first_rank = numbered.begin()->first;
  const size_t step_count = numbered.begin()->second.size();
  for (const auto& [rank, steps] : numbered) {
    if (steps.size() != step_count) {
      return Status::invalid_argument(path + ": rank " + std::to_string(rank) + " has " + std::to_string(steps.size()) +
                                      " profiler steps with device events, rank " + std::to_string(first_rank) +
                                      " has " + std::to_string(step_count) +
                                      " (every rank must record the same steps)");
    }
  }
  return numbered;
}

}  // namespace clustertwin::models::kineto_detail
