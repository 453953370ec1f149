#include "calibrators/derive_plan.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/text.h"
#include "models/plan/plan_json.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::calibrators {
namespace {

using traces::Category;
using traces::Event;

bool on_device(Category c) {
  return c == Category::kCompute || c == Category::kComm || c == Category::kCopy;
}

bool is_step_marker(const Event& e) {
  return e.category == Category::kHost && e.name.rfind("ProfilerStep#", 0) == 0;
}

// One (rank, step): its start (the marker's, or its first device event's) and
// its device events per stream id, in the order they started.
struct StepEvents {
  double start_us = 0;
  std::optional<double> end_us;  // the next step's start (the last of several: none; one: its marker's end)
  std::map<int64_t, std::vector<size_t>> by_stream;
};

std::string stream_name(const traces::Trace& trace, int64_t stream) {
  return stream >= 0 && stream < static_cast<int64_t>(trace.metadata.streams.size())
             ? trace.metadata.streams[static_cast<size_t>(stream)]
             : "stream " + std::to_string(stream);
}

std::string key_of(const Event& e) {
  return e.cost_key.empty() ? e.name : e.cost_key;
}

}  // namespace

StatusOr<DerivedRun> derive_plan(const traces::Trace& trace, const std::string& path,
                                 const DerivePlanOptions& options) {
  auto bad = [&](const std::string& what) { return Status::invalid_argument(path + ": " + what); };
  const nlohmann::json config = nlohmann::json::parse(trace.metadata.config_json, nullptr, false);
  if (config.is_object() && config.contains("plan")) {
    return bad("field 'metadata.config.plan': the trace already carries its plan; calibrate it as it is");
  }
  const std::vector<Event>& events = trace.events;
  // Step markers per rank, by start.
  // Kineto marks a step twice, on the host thread and on the GPU's timeline (gpu_user_annotation): a step
  // starts at the earliest marker of its name.
  // The host thread's marker starts first; its end is where the host left the step.
  std::map<int64_t, std::map<std::string, std::pair<double, double>>> marker_of;  // rank -> name -> start, end
  for (const Event& e : events) {
    if (!is_step_marker(e)) continue;
    auto [it, fresh] = marker_of[e.rank].try_emplace(e.name, e.ts_us, e.end_us());
    if (!fresh && e.ts_us < it->second.first) it->second = {e.ts_us, e.end_us()};
  }
  std::map<int64_t, std::vector<double>> markers;
  std::map<int64_t, std::map<double, double>> marker_end;  // rank -> start -> end
  for (const auto& [rank, named] : marker_of) {
    for (const auto& [name, span] : named) {
      markers[rank].push_back(span.first);
      marker_end[rank][span.first] = span.second;
    }
    std::sort(markers[rank].begin(), markers[rank].end());
    // A step's host time runs to the next step's start. The last step's end is not known (its marker
    // ends where the profiler stopped, not where the next step would start): its tail has no sample.
    // With one step, its marker's end is all there is.
    for (size_t i = 0; i + 1 < markers[rank].size(); ++i)
      marker_end[rank][markers[rank][i]] = markers[rank][i + 1];
    if (markers[rank].size() > 1) marker_end[rank].erase(markers[rank].back());
  }
  // Device events per rank and step.
  std::map<int64_t, std::map<int, StepEvents>> ranks;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!on_device(e.category)) continue;
    int step = 0;
    double start = 0;
    auto m = markers.find(e.rank);
    if (m != markers.end()) {
      // A device event belongs to the step that launched it (the launch link), else to the one it ran in.
      const auto it = std::upper_bound(m->second.begin(), m->second.end(), e.host_ts_us.value_or(e.ts_us));
      if (it == m->second.begin()) continue;  // before the first marker: the profiler's warm-up
      step = static_cast<int>(it - m->second.begin()) - 1;
      start = *(it - 1);
    }
    auto [s, fresh] = ranks[e.rank].try_emplace(step);
    // Without markers the step starts with its first launch (or device event).
    const double first = std::min(e.ts_us, e.host_ts_us.value_or(e.ts_us));
    if (m == markers.end()) start = fresh ? first : std::min(s->second.start_us, first);
    s->second.start_us = start;
    if (m != markers.end()) {
      auto end = marker_end[e.rank].find(start);
      if (end != marker_end[e.rank].end()) s->second.end_us = end->second;
    }
    s->second.by_stream[e.stream].push_back(i);
  }
  if (ranks.empty()) return bad("no device events (compute, comm, copy) in profiler steps to derive a plan from");
  for (auto& [rank, steps] : ranks) {
    for (auto& [step, s] : steps) {
      for (auto& [stream, list] : s.by_stream) {
        std::stable_sort(list.begin(), list.end(),
                         [&](size_t a, size_t b) { return events[a].ts_us < events[b].ts_us; });
      }
    }
  }
  // Steps are numbered from 0 in order on each rank; every rank has as many.
  const int64_t first_rank = ranks.begin()->first;
  const std::map<int, StepEvents>& first_steps = ranks.begin()->second;
  const int step_count = static_cast<int>(first_steps.size());
  for (const auto& [rank, steps] : ranks) {
    if (static_cast<int>(steps.size()) != step_count) {
      return bad("rank " + std::to_string(rank) + " has " + std::to_string(steps.size()) +
                 " profiler steps with device events, rank " + std::to_string(first_rank) + " has " +
                 std::to_string(step_count) + " (every rank must record the same steps)");
    }
  }
  std::vector<const StepEvents*> rank0;
  for (const auto& [step, s] : first_steps)
    rank0.push_back(&s);
  const int tmpl = step_count >= 2 ? 1 : 0;
  const StepEvents& t = *rank0[static_cast<size_t>(tmpl)];

  // The plan: the template step's device events, stream by stream.
  DerivedRun out;
  out.steps = step_count;  // the kept steps, once matched below
  out.template_step = tmpl;
  models::Plan& plan = out.plan;
  plan.system = trace.metadata.system.empty() ? "imported" : trace.metadata.system;
  plan.variant = "derived";
  std::map<int64_t, int> plan_stream;  // trace stream id -> plan stream
  std::map<size_t, int> task_of;       // template event index -> task id
  std::map<std::string, int> name_uses;
  std::map<std::string, int> sizeless;  // collective cost key -> tasks without bytes
  for (const auto& [stream, list] : t.by_stream) {
    plan_stream[stream] = static_cast<int>(plan.streams.size());
    plan.streams.push_back(stream_name(trace, stream));
    for (size_t idx : list) {
      const Event& e = events[idx];
      models::Task task;
      task.id = static_cast<int>(plan.tasks.size());
      const std::string key = key_of(e);
      const int uses = name_uses[key]++;
      task.name = uses == 0 ? key : key + " #" + std::to_string(uses + 1);
      task.stream = plan_stream[stream];
      task.cost_key = key;
      const std::string where = "rank " + std::to_string(first_rank) + ", step " + std::to_string(tmpl) + ", stream '" +
                                plan.streams.back() + "': event '" + e.name + "'";
      if (e.category == Category::kCompute) {
        task.kind = models::TaskKind::kCompute;
        task.flops = e.flops.value_or(0);
      } else if (e.category == Category::kCopy) {
        task.kind = models::TaskKind::kCopy;
        task.bytes = e.bytes.value_or(0);
      } else {
        task.kind = models::TaskKind::kCollective;
        const auto op = models::collective_op_from_name(e.collective);
        if (!op)
          return bad(where + ": a comm event without a known collective (args.collective '" + e.collective + "')");
        if (*op == models::CollectiveOp::kSend || *op == models::CollectiveOp::kRecv) {
          return bad(where + ": point-to-point " + e.collective + " is not derived yet (collectives only)");
        }
        // Older PyTorch records neither the kernel's message size nor its operator's input dims.
        if (!e.bytes || *e.bytes <= 0) ++sizeless[key];
        task.bytes = e.bytes.value_or(0);
        if (*op == models::CollectiveOp::kAllGather) task.bytes *= std::max<int64_t>(1, e.group_size.value_or(1));
        models::Collective c;
        c.op = *op;
        task.collective = c;
      }
      task.grad_bytes = e.grad_bytes.value_or(0);
      task_of[idx] = task.id;
      plan.tasks.push_back(std::move(task));
    }
  }
  const StepEvents* before = tmpl > 0 ? rank0[static_cast<size_t>(tmpl - 1)] : nullptr;
  // When each stream of the template step was last busy before event k: the event before it, or the
  // stream's last one in the step before.
  auto busy_until = [&](int64_t stream, size_t k) {
    const std::vector<size_t>& list = t.by_stream.at(stream);
    if (k > 0) return events[list[k - 1]].end_us();
    if (before != nullptr) {
      auto prev = before->by_stream.find(stream);
      if (prev != before->by_stream.end() && !prev->second.empty()) return events[prev->second.back()].end_us();
    }
    return t.start_us;
  };

  // Host tasks, from the launch link (see the header): the host's timeline cut at every launch the device
  // waited for (its stream sat idle until the launch ended), each piece a task on a "host" stream, the
  // kernel depending on the piece that ends with its launch; the last piece runs to the next step's start.
  // The event of `s` that ended last in [from, to] on a stream other than `stream`.
  auto latest_elsewhere = [&](const StepEvents& s, int64_t stream, double from, double to) {
    std::optional<size_t> found;
    for (const auto& [other, others] : s.by_stream) {
      if (other == stream) continue;
      for (size_t idx : others) {
        const double end = events[idx].end_us();
        if (end >= from - 1e-9 && end <= to + 1e-9 && (!found || end > events[*found].end_us())) found = idx;
      }
    }
    return found;
  };
  std::vector<std::pair<double, size_t>> binding;  // launch end, template event
  if (options.host_tasks) {
    for (const auto& [stream, list] : t.by_stream) {
      for (size_t k = 0; k < list.size(); ++k) {
        const Event& e = events[list[k]];
        const auto launched = e.launch_end_us();
        const double idle_from = busy_until(stream, k);
        if (!launched || e.ts_us - idle_from <= options.min_wait_us || *launched <= idle_from) continue;
        // A launch that began as another stream's task ended was the host waiting for the device (a
        // synchronize, recorded or not): the kernel depends on that task, not on the host.
        const auto other = latest_elsewhere(t, stream, idle_from, e.ts_us);
        if (other && *e.host_ts_us <= events[*other].end_us() + options.sync_window_us) continue;
        binding.emplace_back(*launched, list[k]);
      }
    }
    std::sort(binding.begin(), binding.end());
  }
  std::vector<size_t> host_cut;         // the template event whose launch ends each host task but the tail
  int first_host = -1, host_tail = -1;  // their tasks
  std::set<int> cut_tasks;              // the device tasks that wait for a host task
  if (!binding.empty()) {
    const int host_stream = static_cast<int>(plan.streams.size());
    plan.streams.push_back("host");
    auto host_task = [&](const std::string& name) {
      models::Task task;
      task.id = static_cast<int>(plan.tasks.size());
      task.name = name;
      task.cost_key = name;
      task.kind = models::TaskKind::kHost;
      task.stream = host_stream;
      plan.tasks.push_back(task);
      return task.id;
    };
    first_host = static_cast<int>(plan.tasks.size());
    for (size_t j = 0; j < binding.size(); ++j) {
      const int h = host_task("host #" + std::to_string(j + 1));
      plan.tasks[static_cast<size_t>(task_of.at(binding[j].second))].deps.push_back(h);
      cut_tasks.insert(task_of.at(binding[j].second));
      host_cut.push_back(binding[j].second);
    }
    if (t.end_us && *t.end_us > binding.back().first) host_tail = host_task("host tail");
  }

  // Cross-stream dependencies, from rank 0's idle gaps (see the header).
  for (const auto& [stream, list] : t.by_stream) {
    for (size_t k = 0; k < list.size(); ++k) {
      const Event& b = events[list[k]];
      double idle_from = k > 0 ? events[list[k - 1]].end_us() : t.start_us;
      // A kernel launched after its stream went idle waited for the host first: a host task says so.
      const auto launched = b.launch_end_us();
      if (cut_tasks.count(task_of.at(list[k])) != 0 && *launched > idle_from) idle_from = *launched;
      if (b.ts_us - idle_from <= options.min_wait_us) continue;
      // The latest end in [idle_from, b.ts] on another stream, this step first, then the previous one.
      auto latest = [&](const StepEvents& s) { return latest_elsewhere(s, stream, idle_from, b.ts_us); };
      models::Task& task = plan.tasks[static_cast<size_t>(task_of.at(list[k]))];
      if (auto a = latest(t)) {
        task.deps.push_back(task_of.at(*a));
      } else if (before != nullptr) {
        if (auto p = latest(*before)) {
          // The same stream position in the template step is the task.
          const Event& pe = events[*p];
          const auto& plist = before->by_stream.at(pe.stream);
          const size_t pos = static_cast<size_t>(std::find(plist.begin(), plist.end(), *p) - plist.begin());
          const auto& tlist = t.by_stream.find(pe.stream);
          if (tlist != t.by_stream.end() && pos < tlist->second.size())
            task.prev_step_deps.push_back(task_of.at(tlist->second[pos]));
        }
      }
    }
  }
  for (const auto& [key, count] : sizeless) {
    out.notes.push_back(std::to_string(count) + " collective task(s) '" + key +
                        "' without a message size (neither 'In msg nelems' nor a c10d operator's 'Input Dims'): " +
                        "0 bytes, so calibrate prices them by their measured time alone and they do not grow with " +
                        "the message at other worker counts");
  }
  CT_RETURN_IF_ERROR(models::validate_plan(plan, path + " (derived plan)"));
  // Every rank and step runs the template; its events get their task and
  // step. Ranks name their streams apart ("gpu0 stream 20", "gpu1 stream
  // 20"): a rank's device streams, in id order, stand for the template's.
  std::vector<int64_t> template_streams;
  for (const auto& [stream, list] : t.by_stream)
    template_streams.push_back(stream);
  std::map<size_t, std::pair<int, int>> assigned;  // event index -> (step, task)
  std::map<int, std::string> mismatch;             // step -> the first way a rank's step differs from the template
  for (const auto& [rank, steps] : ranks) {
    std::set<int64_t> used;
    for (const auto& [marker, s] : steps) {
      for (const auto& [stream, list] : s.by_stream)
        used.insert(stream);
    }
    if (used.size() != template_streams.size()) {
      return bad("rank " + std::to_string(rank) + " runs device work on " + std::to_string(used.size()) +
                 " streams, rank " + std::to_string(first_rank) + "'s step " + std::to_string(tmpl) + " on " +
                 std::to_string(template_streams.size()) + " (every rank and step must run the same plan)");
    }
    std::map<int64_t, int64_t> as_template;  // this rank's stream -> the template's
    size_t k = 0;
    for (int64_t stream : used)
      as_template[stream] = template_streams[k++];
    int step = 0;
    for (const auto& [marker, s] : steps) {
      const std::string at = "rank " + std::to_string(rank) + ", step " + std::to_string(step);
      std::map<int64_t, std::vector<size_t>> mine;  // by the template's stream
      for (const auto& [stream, list] : s.by_stream)
        mine[as_template.at(stream)] = list;
      std::string& problem = mismatch[step];
      for (const auto& [stream, tlist] : t.by_stream) {
        if (!problem.empty()) break;
        const auto found = mine.find(stream);
        const size_t n = found == mine.end() ? 0 : found->second.size();
        if (n != tlist.size()) {
          problem = at + ", stream '" + stream_name(trace, stream) + "': " + std::to_string(n) +
                    " device events where rank " + std::to_string(first_rank) + "'s step " + std::to_string(tmpl) +
                    " has " + std::to_string(tlist.size());
          break;
        }
        for (size_t i = 0; i < n; ++i) {
          const Event& e = events[found->second[i]];
          const Event& te = events[tlist[i]];
          if (key_of(e) != key_of(te)) {
            problem = at + ", stream '" + stream_name(trace, stream) + "': event " + std::to_string(i) + " is '" +
                      key_of(e) + "' where rank " + std::to_string(first_rank) + "'s step " + std::to_string(tmpl) +
                      " has '" + key_of(te) + "'";
            break;
          }
          assigned[found->second[i]] = {step, task_of.at(tlist[i])};
        }
      }
      ++step;
    }
  }
  // The template's cross-stream dependencies checked on every kept step of its rank: a dependency that
  // ended after its task started in some step was a coincidence of the template step and goes; a task
  // whose stream sat idle before it in any step depends on the other stream's task that never ended after
  // it started and ended inside its idle gap in the most steps (the latest in the template step on a tie).
  auto check_dependencies = [&](int64_t rank, int first_step) {
    const int device_tasks = first_host >= 0 ? first_host : static_cast<int>(plan.tasks.size());
    const int n_steps = step_count - first_step;
    std::vector<std::vector<const Event*>> at(static_cast<size_t>(n_steps),
                                              std::vector<const Event*>(static_cast<size_t>(device_tasks)));
    for (const auto& [idx, st] : assigned) {
      if (events[idx].rank == rank && st.first >= first_step && st.second < device_tasks)
        at[static_cast<size_t>(st.first - first_step)][static_cast<size_t>(st.second)] = &events[idx];
    }
    for (const auto& row : at) {
      for (const Event* e : row)
        if (e == nullptr) return;  // cannot happen: every kept step matched the template
    }
    std::vector<std::vector<std::pair<double, int>>> ends(static_cast<size_t>(n_steps));  // sorted (end, task)
    for (int s = 0; s < n_steps; ++s) {
      for (int d = 0; d < device_tasks; ++d)
        ends[static_cast<size_t>(s)].emplace_back(at[static_cast<size_t>(s)][static_cast<size_t>(d)]->end_us(), d);
      std::sort(ends[static_cast<size_t>(s)].begin(), ends[static_cast<size_t>(s)].end());
    }
    std::vector<int> stream_prev(static_cast<size_t>(device_tasks), -1), stream_last(plan.streams.size(), -1);
    for (int b = 0; b < device_tasks; ++b) {
      const models::Task& task = plan.tasks[static_cast<size_t>(b)];
      stream_prev[static_cast<size_t>(b)] = stream_last[static_cast<size_t>(task.stream)];
      stream_last[static_cast<size_t>(task.stream)] = b;
    }
    const std::map<int, StepEvents>& steps = ranks.at(rank);
    constexpr double kSlack = 0.01;  // us: timestamps of two streams of one device share a clock
    for (int b = 0; b < device_tasks; ++b) {
      models::Task& task = plan.tasks[static_cast<size_t>(b)];
      std::map<int, int> score;  // candidate -> steps whose idle gap it ended in
      for (int s = 0; s < n_steps; ++s) {
        const Event& e = *at[static_cast<size_t>(s)][static_cast<size_t>(b)];
        const int p = stream_prev[static_cast<size_t>(b)];
        double idle_from =
            p >= 0 ? at[static_cast<size_t>(s)][static_cast<size_t>(p)]->end_us() : steps.at(s + first_step).start_us;
        if (p < 0 && s > 0) {
          const int last = stream_last[static_cast<size_t>(task.stream)];
          idle_from = std::max(idle_from, at[static_cast<size_t>(s - 1)][static_cast<size_t>(last)]->end_us());
        }
        const auto launched = e.launch_end_us();
        if (cut_tasks.count(b) != 0 && launched && *launched > idle_from) idle_from = *launched;
        if (e.ts_us - idle_from <= options.min_wait_us) continue;
        const auto& list = ends[static_cast<size_t>(s)];
        for (auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(idle_from - kSlack, -1));
             it != list.end() && it->first <= e.ts_us + kSlack; ++it) {
          if (plan.tasks[static_cast<size_t>(it->second)].stream != task.stream) ++score[it->second];
        }
      }
      const auto valid = [&](int d) {
        for (int s = 0; s < n_steps; ++s) {
          if (at[static_cast<size_t>(s)][static_cast<size_t>(d)]->end_us() >
              at[static_cast<size_t>(s)][static_cast<size_t>(b)]->ts_us + kSlack)
            return false;
        }
        return true;
      };
      int best = -1;
      const auto& tmpl_row = at[static_cast<size_t>(tmpl - first_step)];
      for (const auto& [d, n] : score) {
        if (!valid(d)) continue;
        const int bn = best >= 0 ? score[best] : 0;
        if (best < 0 || n > bn ||
            (n == bn && tmpl_row[static_cast<size_t>(d)]->end_us() > tmpl_row[static_cast<size_t>(best)]->end_us()))
          best = d;
      }
      std::vector<int> deps;
      for (int d : task.deps)
        if (d >= device_tasks) deps.push_back(d);  // host tasks stay
      if (best >= 0) {
        deps.push_back(best);
        task.prev_step_deps.clear();
      }
      task.deps = std::move(deps);
    }
  };
  // Steps before the template that run something else are the profiler's first steps settling (lazy
  // initialisation, autotuning, a first batch): left out, with a note. A later step must match.
  int first_kept = 0;
  for (const auto& [step, problem] : mismatch) {
    if (problem.empty()) continue;
    if (step >= tmpl) return bad(problem + " (every rank and step from the template on must run the same plan)");
    first_kept = std::max(first_kept, step + 1);
  }
  for (int step = 0; step < first_kept; ++step) {
    out.notes.push_back("step " + std::to_string(step) +
                        " left out: " + (mismatch[step].empty() ? "it comes before a step that does" : mismatch[step]));
  }
  const int kept_steps = step_count - first_kept;
  if (kept_steps > 1) check_dependencies(first_rank, first_kept);
  CT_RETURN_IF_ERROR(models::validate_plan(plan, path + " (derived plan)"));
  // The trace of the run, as a recorded run's: device events with step and task, the plan in the config.
  out.trace.metadata = trace.metadata;
  out.trace.metadata.variant = "derived";
  nlohmann::ordered_json c;
  c["derived_from"] = path;
  if (config.is_object()) c["import"] = config;
  c["plan"] = nlohmann::ordered_json::parse(models::plan_to_json(plan));
  c["runner_steps"] = kept_steps;
  c["prologue_steps"] = 0;
  c["template_step"] = tmpl - first_kept;
  c["steps_left_out"] = first_kept;
  c["min_wait_us"] = options.min_wait_us;
  out.trace.metadata.config_json = c.dump();
  out.steps = kept_steps;
  out.template_step = tmpl - first_kept;
  for (const auto& [idx, st] : assigned) {
    if (st.first < first_kept) continue;
    Event e = events[idx];
    e.step = st.first - first_kept;
    e.task_id = st.second;
    // The plan's collectives span the world; a kernel that does not say its group (older PyTorch) ran in it.
    if (e.category == Category::kComm && !e.group_size) e.group_size = trace.metadata.world_size;
    out.trace.events.push_back(std::move(e));
  }
  if (!host_cut.empty()) {
    // Each kept (rank, step)'s host pieces: from the step's start (or the last cut) to the launch of the
    // event that holds the template's cut; the tail to the marker's end.
    std::map<std::tuple<int64_t, int, int>, size_t> event_of;  // rank, step, task -> event
    for (const auto& [idx, st] : assigned)
      event_of[{events[idx].rank, st.first, st.second}] = idx;
    const auto host_stream = static_cast<int64_t>(out.trace.metadata.streams.size());
    out.trace.metadata.streams.push_back("host");
    for (const auto& [rank, steps] : ranks) {
      for (const auto& [step, s] : steps) {
        if (step < first_kept) continue;
        double from = s.start_us;
        auto piece = [&](int task, double to) {
          Event h;
          h.name = plan.tasks[static_cast<size_t>(task)].name;
          h.cost_key = h.name;
          h.category = Category::kHost;
          h.rank = rank;
          h.stream = host_stream;
          h.ts_us = from;
          h.dur_us = std::max(0.0, to - from);
          h.step = step - first_kept;
          h.task_id = task;
          out.trace.events.push_back(std::move(h));
          from = std::max(from, to);
        };
        for (size_t j = 0; j < host_cut.size(); ++j) {
          const int cut_task = task_of.at(host_cut[j]);
          const auto it = event_of.find({rank, step, cut_task});
          if (it == event_of.end()) continue;  // cannot happen: every kept step matched the template
          const Event& e = events[it->second];
          piece(first_host + static_cast<int>(j), e.launch_end_us().value_or(e.ts_us));
        }
        if (host_tail >= 0 && s.end_us) piece(host_tail, *s.end_us);
      }
    }
  }
  return out;
}

}  // namespace clustertwin::calibrators
