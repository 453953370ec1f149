#include "models/plan/import/kineto_plan.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "models/plan/import/kineto_steps.h"
#include "models/plan/plan_json.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models {
namespace {

using kineto_detail::Group;
using kineto_detail::RankSteps;
using kineto_detail::StepEvents;
using traces::Category;
using traces::Event;

// What a rank's template step runs, stream by stream (its streams in id order): each event's key and kind,
// and a comm event's collective, bytes and peer offset. Ranks with one signature run one part of the plan.
std::string signature(const traces::Trace& trace, const StepEvents& s, int64_t rank) {
  std::string out;
  for (const auto& [stream, list] : s.by_stream) {
    out += "|";
    for (size_t idx : list) {
      const Event& e = trace.events[idx];
      out += kineto_detail::key_of(e) + "/" + std::string(traces::category_name(e.category));
      if (e.category == Category::kComm) {
        out += "/" + e.collective + "/" + std::to_string(e.bytes.value_or(0));
        if (e.peer) out += "/" + std::to_string(*e.peer - rank);
      }
      out += ";";
    }
  }
  return out;
}

// The ranks as ranges of consecutive ones: {0, 1, 3} -> [0, 2), [3, 4).
std::vector<models::RankRange> ranges_of(const std::vector<int64_t>& ranks) {
  std::vector<models::RankRange> out;
  for (int64_t r : ranks) {
    if (!out.empty() && out.back().end == r) {
      ++out.back().end;
    } else {
      out.push_back({static_cast<int>(r), static_cast<int>(r + 1)});
    }
  }
  return out;
}

// "ranks 0-1, 3" for task names.
std::string ranks_text(const std::vector<models::RankRange>& ranges) {
  std::string out = ranges.size() == 1 && ranges[0].end == ranges[0].begin + 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ranges[i].begin);
    if (ranges[i].end > ranges[i].begin + 1) out += "-" + std::to_string(ranges[i].end - 1);
  }
  return out;
}

// Rank groups. Without point-to-point work every rank runs one plan (data parallel, FSDP), and a rank
// that differs is named; with it (pipeline stages), ranks whose template steps differ run parts of it.
std::vector<Group> rank_groups(const traces::Trace& trace, const RankSteps& ranks, int tmpl) {
  bool point_to_point = false;
  for (const auto& [rank, steps] : ranks)
    for (const auto& [step, s] : steps)
      for (const auto& [stream, list] : s.by_stream)
        for (size_t idx : list)
          point_to_point = point_to_point || kineto_detail::is_point_to_point(trace.events[idx]);
  std::vector<Group> groups;
  std::map<std::string, size_t> by_signature;
  for (const auto& [rank, steps] : ranks) {
    const std::string sig = point_to_point ? signature(trace, steps.at(tmpl), rank) : "";
    auto [it, fresh] = by_signature.try_emplace(sig, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].ranks.push_back(rank);
  }
  return groups;
}

// Steps before the template that run something else are the profiler's first steps settling (lazy
// initialisation, autotuning, a first batch): left out, with a note in `notes`. A later step must match.
// Returns the first step kept.
StatusOr<int> first_kept_step(const std::vector<Group>& groups, int tmpl, const std::string& path,
                              std::vector<std::string>* notes) {
  std::map<int, std::string> mismatch;  // step -> the first way a rank's step differs from its group's template
  for (const Group& g : groups) {
    for (const auto& [step, problem] : g.mismatch) {
      if (mismatch[step].empty()) mismatch[step] = problem;
    }
  }
  int first_kept = 0;
  for (const auto& [step, problem] : mismatch) {
    if (problem.empty()) continue;
    if (step >= tmpl) {
      return Status::invalid_argument(path + ": " + problem +
                                      " (every rank and step from the template on must run the same plan)");
    }
    first_kept = std::max(first_kept, step + 1);
  }
  for (int step = 0; step < first_kept; ++step) {
    notes->push_back("step " + std::to_string(step) +
                     " left out: " + (mismatch[step].empty() ? "it comes before a step that does" : mismatch[step]));
  }
  return first_kept;
}

// One plan: a single group's as it is; several groups' tasks one after another, each group's restricted to
// its ranks and named after them, on the union of their streams (by name). Returns each group's first task
// id; `assigned` gets every group's events with their tasks in `plan`.
std::vector<int> join_group_plans(const std::vector<Group>& groups, models::Plan* plan,
                                  kineto_detail::Assigned* assigned) {
  std::vector<int> offset;  // each group's first task id
  for (const Group& g : groups) {
    offset.push_back(static_cast<int>(plan->tasks.size()));
    const std::vector<models::RankRange> ranges = ranges_of(g.ranks);
    const std::string prefix = groups.size() > 1 ? "[" + ranks_text(ranges) + "] " : "";
    for (models::Task t : g.plan.tasks) {
      t.id += offset.back();
      for (int& d : t.deps)
        d += offset.back();
      for (int& d : t.prev_step_deps)
        d += offset.back();
      const std::string& stream = g.plan.streams[static_cast<size_t>(t.stream)];
      const auto found = std::find(plan->streams.begin(), plan->streams.end(), stream);
      t.stream = static_cast<int>(found - plan->streams.begin());
      if (found == plan->streams.end()) plan->streams.push_back(stream);
      t.name = prefix + t.name;
      if (t.kind == models::TaskKind::kHost) t.cost_key = t.name;  // a group's host pieces are its own
      if (groups.size() > 1) t.ranks = ranges;
      plan->tasks.push_back(std::move(t));
    }
    for (const auto& [idx, st] : g.assigned)
      (*assigned)[idx] = {st.first, st.second + offset.back()};
  }
  return offset;
}

// Each rank's kept steps' spans, the host's pace for the measured step time (recorded_run.h): from a step's
// start (its marker's, else its first launch) to the next step's start (the last step's estimated:
// kineto_steps.cpp); a step without markers to the later of its marker's end and its last device event's.
nlohmann::ordered_json step_spans(const RankSteps& ranks, int first_kept, int step_count) {
  nlohmann::ordered_json spans = nlohmann::ordered_json::array();
  for (const auto& [rank, steps] : ranks) {
    nlohmann::ordered_json own = nlohmann::ordered_json::array();
    for (int step = first_kept; step < step_count; ++step) {
      const kineto_detail::StepEvents& s = steps.at(step);
      own.push_back({s.start_us, s.end_us && s.marker_end_us > 0 ? std::max(*s.end_us, s.start_us)
                                                                 : std::max(s.marker_end_us, s.last_end_us)});
    }
    spans.push_back({{"rank", rank}, {"spans", own}});
  }
  return spans;
}

// The derived run's config: where it came from, the plan, its steps, and their spans.
nlohmann::ordered_json derived_config(const nlohmann::json& config, const std::string& path, const models::Plan& plan,
                                      const RankSteps& ranks, int tmpl, int first_kept, int step_count,
                                      double min_wait_us) {
  nlohmann::ordered_json c;
  c["derived_from"] = path;
  if (config.is_object()) c["import"] = config;
  c["plan"] = nlohmann::ordered_json::parse(models::plan_to_json(plan));
  c["runner_steps"] = step_count - first_kept;
  c["prologue_steps"] = 0;
  c["template_step"] = tmpl - first_kept;
  c["steps_left_out"] = first_kept;
  c["min_wait_us"] = min_wait_us;
  c["step_spans_us"] = step_spans(ranks, first_kept, step_count);
  return c;
}

// The kept device events with their step (from the first kept) and task, as a recorded run's.
void add_kept_events(const traces::Trace& trace, const kineto_detail::Assigned& assigned, int first_kept,
                     std::vector<Event>* out) {
  for (const auto& [idx, st] : assigned) {
    if (st.first < first_kept) continue;
    Event e = trace.events[idx];
    e.step = st.first - first_kept;
    e.task_id = st.second;
    // A kernel that does not say its group (older PyTorch) ran in the world; a send or recv between two.
    if (e.category == Category::kComm && !e.group_size && !e.peer) e.group_size = trace.metadata.world_size;
    out->push_back(std::move(e));
  }
}

// Each kept (rank, step)'s host pieces: from the step's start (or the last cut) to the launch of the
// event that holds its group template's cut; the tail to the marker's end. `offset`: each group's first task.
void add_host_pieces(const traces::Trace& trace, const RankSteps& ranks, const std::vector<Group>& groups,
                     const std::vector<int>& offset, const kineto_detail::Assigned& assigned, int first_kept,
                     const models::Plan& plan, traces::Trace* out) {
  const std::vector<Event>& events = trace.events;
  std::map<std::tuple<int64_t, int, int>, size_t> event_of;  // rank, step, task -> event
  for (const auto& [idx, st] : assigned)
    event_of[{events[idx].rank, st.first, st.second}] = idx;
  std::optional<int64_t> host_stream;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    if (g.host_cut.empty()) continue;
    if (!host_stream) {
      host_stream = static_cast<int64_t>(out->metadata.streams.size());
      out->metadata.streams.push_back("host");
    }
    for (int64_t rank : g.ranks) {
      for (const auto& [step_index, s] : ranks.at(rank)) {
        const int64_t step = step_index;  // a variable, which the lambda below can capture (C++17's rule)
        if (step < first_kept) continue;
        double from = s.start_us;
        auto piece = [&](int task, double to) {
          Event h;
          h.name = plan.tasks[static_cast<size_t>(task)].name;
          h.cost_key = h.name;
          h.category = Category::kHost;
          h.rank = rank;
          h.stream = *host_stream;
          h.ts_us = from;
          h.dur_us = std::max(0.0, to - from);
          h.step = step - first_kept;
          h.task_id = task;
          out->events.push_back(std::move(h));
          from = std::max(from, to);
        };
        for (size_t j = 0; j < g.host_cut.size(); ++j) {
          const int cut_task = g.task_of.at(g.host_cut[j]) + offset[gi];
          const auto it = event_of.find({rank, step, cut_task});
          if (it == event_of.end()) continue;  // cannot happen: every kept step matched the template
          const Event& e = events[it->second];
          piece(g.first_host + offset[gi] + static_cast<int>(j),
                g.host_cut_at_start[j] ? e.ts_us : e.launch_end_us().value_or(e.ts_us));
        }
        if (g.host_tail >= 0 && s.end_us) piece(g.host_tail + offset[gi], *s.end_us);
      }
    }
  }
}

}  // namespace

StatusOr<DerivedRun> derive_plan(const traces::Trace& trace, const std::string& path,
                                 const DerivePlanOptions& options) {
  nlohmann::json config;
  try {  // the trace's own config; nlohmann throws on a number beyond a double even when asked not to
    config = nlohmann::json::parse(trace.metadata.config_json, nullptr, false);
  } catch (const nlohmann::json::exception&) {
    config = nlohmann::json(nlohmann::json::value_t::discarded);
  }
  if (config.is_object() && config.contains("plan")) {
    return Status::invalid_argument(
        path + ": field 'metadata.config.plan': the trace already carries its plan; calibrate it as it is");
  }
  auto steps_of = kineto_detail::steps_of(trace, path);
  if (!steps_of.is_ok()) return steps_of.status();
  const RankSteps& ranks = *steps_of;
  CT_RETURN_IF_ERROR(kineto_detail::check_peers(trace, ranks, path));
  const int step_count = static_cast<int>(ranks.begin()->second.size());
  const int tmpl = step_count >= 2 ? 1 : 0;

  std::vector<Group> groups = rank_groups(trace, ranks, tmpl);
  for (Group& g : groups) {
    CT_RETURN_IF_ERROR(kineto_detail::derive_group(trace, ranks, tmpl, options, path, &g));
    CT_RETURN_IF_ERROR(models::validate_plan(g.plan, path + " (derived plan)"));
    kineto_detail::tag_point_to_point(&g.plan, g.launch_order);
  }
  DerivedRun out;
  auto first_kept_or = first_kept_step(groups, tmpl, path, &out.notes);
  if (!first_kept_or.is_ok()) return first_kept_or.status();
  const int first_kept = *first_kept_or;
  const int kept_steps = step_count - first_kept;
  for (Group& g : groups) {
    if (kept_steps > 1) kineto_detail::check_group_dependencies(trace, ranks, tmpl, first_kept, options, &g);
    out.notes.insert(out.notes.end(), g.notes.begin(), g.notes.end());
  }

  models::Plan& plan = out.plan;
  plan.system = trace.metadata.system.empty() ? "imported" : trace.metadata.system;
  plan.variant = "derived";
  kineto_detail::Assigned assigned;
  const std::vector<int> offset = join_group_plans(groups, &plan, &assigned);
  CT_RETURN_IF_ERROR(models::validate_plan(plan, path + " (derived plan)"));
  CT_RETURN_IF_ERROR(kineto_detail::check_pairs(trace, plan, assigned, first_kept, path));
  const int world = trace.metadata.world_size;
  CT_RETURN_IF_ERROR(models::validate_plan_for_world(plan, path + " (derived plan)", world, world));
  // The trace of the run, as a recorded run's: device events with step and task, the plan in the config.
  out.trace.metadata = trace.metadata;
  out.trace.metadata.variant = "derived";
  out.trace.metadata.config_json =
      derived_config(config, path, plan, ranks, tmpl, first_kept, step_count, options.min_wait_us).dump();
  out.steps = kept_steps;
  out.template_step = tmpl - first_kept;
  for (const Group& g : groups)
    out.template_ranks.push_back(g.ranks.front());
  add_kept_events(trace, assigned, first_kept, &out.trace.events);
  add_host_pieces(trace, ranks, groups, offset, assigned, first_kept, plan, &out.trace);
  return out;
}

}  // namespace clustertwin::models
