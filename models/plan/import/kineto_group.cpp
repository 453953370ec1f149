// One rank group's part of a derived plan (kineto_steps.h): the template
// step's events as tasks, the host's pieces, cross-stream dependencies from
// idle gaps, and every step of the group's ranks matched to the template.

#include <algorithm>
#include <set>
#include <tuple>

#include "models/plan/import/kineto_steps.h"
#include "models/plan/plan_validator.h"

namespace clustertwin::models::kineto_detail {

using traces::Category;
using traces::Event;

namespace {

// A collective's group in the plan's terms: the world, unless the event says it ran among fewer ranks,
// laid out as global ranks start + i x stride (the import reads them from c10d's args).
StatusOr<models::GroupSpec> group_spec(const Event& e, int64_t world) {
  models::GroupSpec spec;
  const int64_t n = e.group_size.value_or(world);
  if (n >= world) return spec;
  const std::string among =
      "a collective '" + e.collective + "' among " + std::to_string(n) + " of the " + std::to_string(world) + " ranks";
  if (!e.group_start || !e.group_stride) {
    return Status::invalid_argument(among + " without its group's ranks (fields 'group_start' / 'group_stride': " +
                                    "c10d's 'Process Group Ranks' or 'Global rank start' / 'stride', which older " +
                                    "PyTorch does not record); the plan cannot place it");
  }
  const int64_t start = *e.group_start, stride = *e.group_stride;
  if (stride == 1 && start % n == 0 && world % n == 0) {
    spec.kind = models::GroupSpec::Kind::kBlock;  // consecutive ranks: a block
    spec.size = static_cast<int>(n);
    return spec;
  }
  if (stride * n == world && start < stride) {
    spec.kind = models::GroupSpec::Kind::kStride;  // every stride-th rank across the world
    spec.size = static_cast<int>(stride);
    return spec;
  }
  return Status::invalid_argument(among + " with global ranks " + std::to_string(start) + " + i x " +
                                  std::to_string(stride) + ": neither a block of consecutive ranks nor ranks " +
                                  "equal modulo a stride across the world (the plan's groups)");
}

// A collective task's operation, peer or group, and bytes from its event; `sizeless` counts the collective tasks
// without bytes by cost key.
Status price_collective(const Event& e, int64_t world, int64_t first_rank, const std::string& key,
                        std::map<std::string, int>* sizeless, models::Task* task) {
  task->kind = models::TaskKind::kCollective;
  const auto op = models::collective_op_from_name(e.collective);
  if (!op)
    return Status::invalid_argument("a comm event without a known collective (args.collective '" + e.collective + "')");
  models::Collective c;
  c.op = *op;
  if (*op == models::CollectiveOp::kSend || *op == models::CollectiveOp::kRecv) {
    c.peer_offset = static_cast<int>(*e.peer - first_rank);  // check_peers: present, in the world
  } else {
    auto group = group_spec(e, world);
    if (!group.is_ok()) return group.status();
    c.group = *group;
  }
  // Older PyTorch records neither the kernel's message size nor its operator's input dims.
  if (!e.bytes || *e.bytes <= 0) ++(*sizeless)[key];
  task->bytes = e.bytes.value_or(0);
  if (*op == models::CollectiveOp::kAllGather) task->bytes *= std::max<int64_t>(1, e.group_size.value_or(1));
  task->collective = c;
  return Status::ok();
}

// One task per event of the template step `t`, stream by stream, each stream a plan stream; `sizeless` counts the
// collective tasks without bytes by cost key.
Status group_kernels_into_tasks(const traces::Trace& trace, const StepEvents& t, int tmpl, const std::string& path,
                                std::map<std::string, int>* sizeless, Group* g) {
  const int64_t first_rank = g->ranks.front();
  models::Plan& plan = g->plan;
  std::map<std::string, int> name_uses;
  for (const auto& [stream, list] : t.by_stream) {
    const int plan_stream = static_cast<int>(plan.streams.size());
    plan.streams.push_back(stream_name(trace, stream));
    for (size_t idx : list) {
      const Event& e = trace.events[idx];
      models::Task task;
      task.id = static_cast<int>(plan.tasks.size());
      const std::string key = key_of(e);
      const int uses = name_uses[key]++;
      task.name = uses == 0 ? key : key + " #" + std::to_string(uses + 1);
      task.stream = plan_stream;
      task.cost_key = key;
      if (e.category == Category::kCompute) {
        task.kind = models::TaskKind::kCompute;
        task.flops = e.flops.value_or(0);
      } else if (e.category == Category::kCopy) {
        task.kind = models::TaskKind::kCopy;
        task.bytes = e.bytes.value_or(0);
      } else {
        const Status priced = price_collective(e, trace.metadata.world_size, first_rank, key, sizeless, &task);
        if (!priced.is_ok()) {
          return Status::invalid_argument(path + ": rank " + std::to_string(first_rank) + ", step " +
                                          std::to_string(tmpl) + ", stream '" + plan.streams.back() + "': event '" +
                                          e.name + "': " + priced.message());
        }
      }
      task.grad_bytes = e.grad_bytes.value_or(0);
      g->task_of[idx] = task.id;
      plan.tasks.push_back(std::move(task));
    }
  }
  return Status::ok();
}

// The device tasks in the order the host launched their template events (else started them).
std::vector<int> launch_order_of(const std::vector<Event>& events, const std::map<size_t, int>& task_of) {
  std::vector<std::pair<double, int>> launched;  // launch (else start), task
  for (const auto& [idx, task] : task_of)
    launched.emplace_back(events[idx].host_ts_us.value_or(events[idx].ts_us), task);
  std::sort(launched.begin(), launched.end());
  std::vector<int> order;
  for (const auto& [when, task] : launched)
    order.push_back(task);
  return order;
}

// The template step `t` of a group's first rank and the step before it (null for the first): when its streams
// were busy, which both the host tasks and the idle-gap dependencies ask.
struct TemplateStep {
  const std::vector<Event>& events;
  const StepEvents& t;
  const StepEvents* before;

  // When each stream of the template step was last busy before event k: the event before it, or the
  // stream's last one in the step before.
  double busy_until(int64_t stream, size_t k) const {
    const std::vector<size_t>& list = t.by_stream.at(stream);
    if (k > 0) return events[list[k - 1]].end_us();
    if (before != nullptr) {
      auto prev = before->by_stream.find(stream);
      if (prev != before->by_stream.end() && !prev->second.empty()) return events[prev->second.back()].end_us();
    }
    return t.start_us;
  }

  // The event of `s` that ended last in [from, to] on a stream other than `stream`.
  std::optional<size_t> latest_elsewhere(const StepEvents& s, int64_t stream, double from, double to) const {
    std::optional<size_t> found;
    for (const auto& [other, others] : s.by_stream) {
      if (other == stream) continue;
      for (size_t idx : others) {
        const double end = events[idx].end_us();
        if (end >= from - 1e-9 && end <= to + 1e-9 && (!found || end > events[*found].end_us())) found = idx;
      }
    }
    return found;
  }
};

// A launch the device waited for: where the host's timeline is cut before the kernel.
struct HostCut {
  double at;      // the launch's end, or the kernel's start
  size_t event;   // template event
  bool at_start;  // the piece runs to the kernel's start
  bool operator<(const HostCut& o) const { return std::tie(at, event) < std::tie(o.at, o.event); }
};

// Host tasks, from the launch link (see the header): the host's timeline cut at every launch the device
// waited for (its stream sat idle until the launch ended), each piece a task on a "host" stream, the
// kernel depending on the piece that ends with its launch; the last piece runs to the next step's start.
// These are the cuts, in time order.
std::vector<HostCut> find_host_cuts(const TemplateStep& ts, const DerivePlanOptions& options) {
  std::vector<HostCut> binding;
  for (const auto& [stream, list] : ts.t.by_stream) {
    for (size_t k = 0; k < list.size(); ++k) {
      const Event& e = ts.events[list[k]];
      const auto launched = e.launch_end_us();
      const double idle_from = ts.busy_until(stream, k);
      if (!launched || e.ts_us - idle_from <= options.min_wait_us || *launched <= idle_from) continue;
      // A launch that began as another stream's task ended was the host waiting for the device (a
      // synchronize, recorded or not): the kernel depends on that task, not on the host.
      const auto other = ts.latest_elsewhere(ts.t, stream, idle_from, e.ts_us);
      if (other && *e.host_ts_us <= ts.events[*other].end_us() + options.sync_window_us) continue;
      // A kernel that still sat idle after its launch ended, with no other stream's task ending meanwhile,
      // waited for something the trace does not show (the launch's own latency, a device busy with work
      // the profiler did not record): the host piece runs to the kernel's start, which keeps that wait.
      const bool unexplained = e.ts_us - *launched > options.min_wait_us &&
                               !ts.latest_elsewhere(ts.t, stream, *launched, e.ts_us) &&
                               (ts.before == nullptr || !ts.latest_elsewhere(*ts.before, stream, *launched, e.ts_us));
      binding.push_back({unexplained ? e.ts_us : *launched, list[k], unexplained});
    }
  }
  std::sort(binding.begin(), binding.end());
  return binding;
}

// A host task per cut on a new "host" stream, the cut kernel depending on it, and the tail to the step's end;
// returns the cut tasks whose host piece runs to their start.
std::set<int> add_host_tasks(const std::vector<HostCut>& binding, const StepEvents& t, Group* g) {
  std::set<int> cut_at_start;
  if (binding.empty()) return cut_at_start;
  models::Plan& plan = g->plan;
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
  g->first_host = static_cast<int>(plan.tasks.size());
  for (size_t j = 0; j < binding.size(); ++j) {
    const int h = host_task("host #" + std::to_string(j + 1));
    const int cut = g->task_of.at(binding[j].event);
    plan.tasks[static_cast<size_t>(cut)].deps.push_back(h);
    g->cut_tasks.insert(cut);
    g->host_cut.push_back(binding[j].event);
    g->host_cut_at_start.push_back(binding[j].at_start);
    if (binding[j].at_start) cut_at_start.insert(cut);
  }
  if (t.end_us && *t.end_us > binding.back().at) g->host_tail = host_task("host tail");
  return cut_at_start;
}

// Cross-stream dependencies, from the template rank's idle gaps (see the header).
void add_idle_gap_dependencies(const TemplateStep& ts, const DerivePlanOptions& options,
                               const std::set<int>& cut_at_start, Group* g) {
  const std::vector<Event>& events = ts.events;
  const StepEvents& t = ts.t;
  const std::map<size_t, int>& task_of = g->task_of;
  for (const auto& [stream_key, list] : t.by_stream) {
    const auto& stream = stream_key;  // a variable, which the lambda below can capture (C++17's rule)
    for (size_t k = 0; k < list.size(); ++k) {
      const Event& b = events[list[k]];
      double idle_from = k > 0 ? events[list[k - 1]].end_us() : t.start_us;
      // A kernel launched after its stream went idle waited for the host first: a host task says so.
      const auto launched = b.launch_end_us();
      if (g->cut_tasks.count(task_of.at(list[k])) != 0 && *launched > idle_from)
        idle_from = cut_at_start.count(task_of.at(list[k])) != 0 ? b.ts_us : *launched;
      if (b.ts_us - idle_from <= options.min_wait_us) continue;
      // The latest end in [idle_from, b.ts] on another stream, this step first, then the previous one.
      auto latest = [&](const StepEvents& s) { return ts.latest_elsewhere(s, stream, idle_from, b.ts_us); };
      models::Task& task = g->plan.tasks[static_cast<size_t>(task_of.at(list[k]))];
      if (auto a = latest(t)) {
        task.deps.push_back(task_of.at(*a));
      } else if (ts.before != nullptr) {
        if (auto p = latest(*ts.before)) {
          // The same stream position in the template step is the task.
          const Event& pe = events[*p];
          const auto& plist = ts.before->by_stream.at(pe.stream);
          const size_t pos = static_cast<size_t>(std::find(plist.begin(), plist.end(), *p) - plist.begin());
          const auto& tlist = t.by_stream.find(pe.stream);
          if (tlist != t.by_stream.end() && pos < tlist->second.size())
            task.prev_step_deps.push_back(task_of.at(tlist->second[pos]));
        }
      }
    }
  }
}

// The first way step `step` of `rank` (its events `mine`, by the template's stream) differs from the template
// step `t` of the group's first rank, or empty; the events it matched get their (step, task) in g->assigned.
std::string match_step(const traces::Trace& trace, const StepEvents& t, int tmpl, int64_t rank, int step,
                       const std::map<int64_t, std::vector<size_t>>& mine, Group* g) {
  const std::vector<Event>& events = trace.events;
  const int64_t first_rank = g->ranks.front();
  const std::string at = "rank " + std::to_string(rank) + ", step " + std::to_string(step);
  for (const auto& [stream, tlist] : t.by_stream) {
    const auto found = mine.find(stream);
    const size_t n = found == mine.end() ? 0 : found->second.size();
    if (n != tlist.size()) {
      return at + ", stream '" + stream_name(trace, stream) + "': " + std::to_string(n) + " device events where rank " +
             std::to_string(first_rank) + "'s step " + std::to_string(tmpl) + " has " + std::to_string(tlist.size());
    }
    for (size_t i = 0; i < n; ++i) {
      const Event& e = events[found->second[i]];
      const Event& te = events[tlist[i]];
      if (key_of(e) != key_of(te)) {
        return at + ", stream '" + stream_name(trace, stream) + "': event " + std::to_string(i) + " is '" + key_of(e) +
               "' where rank " + std::to_string(first_rank) + "'s step " + std::to_string(tmpl) + " has '" +
               key_of(te) + "'";
      }
      // A send or recv runs with the same peer offset as the template's (the offset is the task's).
      if (is_point_to_point(te) && (e.collective != te.collective || *e.peer - rank != *te.peer - first_rank)) {
        return at + ", stream '" + stream_name(trace, stream) + "': event " + std::to_string(i) + " is a " +
               e.collective + " with rank " + std::to_string(e.peer.value_or(-1)) + " where rank " +
               std::to_string(first_rank) + "'s step " + std::to_string(tmpl) + " has a " + te.collective +
               " with rank " + std::to_string(*te.peer) + " (peers " + std::to_string(*te.peer - first_rank) +
               " ranks away)";
      }
      g->assigned[found->second[i]] = {step, g->task_of.at(tlist[i])};
    }
  }
  return "";
}

// Every rank and step runs the template; its events get their task and
// step. Ranks name their streams apart ("gpu0 stream 20", "gpu1 stream
// 20"): a rank's device streams, in id order, stand for the template's.
Status match_ranks_steps(const traces::Trace& trace, const RankSteps& ranks, const StepEvents& t, int tmpl,
                         const std::string& path, Group* g) {
  const int64_t first_rank = g->ranks.front();
  std::vector<int64_t> template_streams;
  for (const auto& [stream, list] : t.by_stream)
    template_streams.push_back(stream);
  for (int64_t rank : g->ranks) {
    const std::map<int, StepEvents>& steps = ranks.at(rank);
    std::set<int64_t> used;
    for (const auto& [marker, s] : steps) {
      for (const auto& [stream, list] : s.by_stream)
        used.insert(stream);
    }
    if (used.size() != template_streams.size()) {
      return Status::invalid_argument(
          path + ": rank " + std::to_string(rank) + " runs device work on " + std::to_string(used.size()) +
          " streams, rank " + std::to_string(first_rank) + "'s step " + std::to_string(tmpl) + " on " +
          std::to_string(template_streams.size()) + " (every rank and step must run the same plan)");
    }
    std::map<int64_t, int64_t> as_template;  // this rank's stream -> the template's
    size_t k = 0;
    for (int64_t stream : used)
      as_template[stream] = template_streams[k++];
    int step = 0;
    for (const auto& [marker, s] : steps) {
      std::map<int64_t, std::vector<size_t>> mine;  // by the template's stream
      for (const auto& [stream, list] : s.by_stream)
        mine[as_template.at(stream)] = list;
      // A step another rank of the group already differs in stays unmatched.
      std::string& problem = g->mismatch[step];
      if (problem.empty()) problem = match_step(trace, t, tmpl, rank, step, mine, g);
      ++step;
    }
  }
  return Status::ok();
}

}  // namespace

Status derive_group(const traces::Trace& trace, const RankSteps& ranks, int tmpl, const DerivePlanOptions& options,
                    const std::string& path, Group* g) {
  const std::map<int, StepEvents>& own = ranks.at(g->ranks.front());
  const TemplateStep ts{trace.events, own.at(tmpl), tmpl > 0 ? &own.at(tmpl - 1) : nullptr};
  std::map<std::string, int> sizeless;  // collective cost key -> tasks without bytes
  CT_RETURN_IF_ERROR(group_kernels_into_tasks(trace, ts.t, tmpl, path, &sizeless, g));
  g->launch_order = launch_order_of(trace.events, g->task_of);
  const std::set<int> cut_at_start =  // the cut tasks whose host piece runs to their start
      add_host_tasks(options.host_tasks ? find_host_cuts(ts, options) : std::vector<HostCut>{}, ts.t, g);
  add_idle_gap_dependencies(ts, options, cut_at_start, g);
  for (const auto& [key, count] : sizeless) {
    g->notes.push_back(std::to_string(count) + " collective task(s) '" + key +
                       "' without a message size (neither 'In msg nelems' nor a c10d operator's 'Input Dims'): " +
                       "0 bytes, so calibrate prices them by their measured time alone and they do not grow with " +
                       "the message at other worker counts");
  }
  CT_RETURN_IF_ERROR(models::validate_plan(g->plan, path + " (derived plan)"));
  return match_ranks_steps(trace, ranks, ts.t, tmpl, path, g);
}

}  // namespace clustertwin::models::kineto_detail
