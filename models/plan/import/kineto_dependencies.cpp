// The template's cross-stream dependencies checked on every kept step of its rank: a dependency that
// ended after its task started in some step was a coincidence of the template step and goes; a task
// whose stream sat idle before it in any step depends on the other stream's task that never ended after
// it started and ended inside its idle gap in the most steps (the latest in the template step on a tie).

#include <algorithm>
#include <map>
#include <optional>

#include "models/plan/import/kineto_steps.h"

namespace clustertwin::models::kineto_detail {

using traces::Event;

namespace {

constexpr double kSlack = 0.01;  // us: timestamps of two streams of one device share a clock

// The template rank's kept steps as their device tasks' events: at[step - first_step][task].
using StepTasks = std::vector<std::vector<const Event*>>;

// Each kept step's events by device task; none when a step lacks one, which cannot happen: every kept step
// matched the template.
std::optional<StepTasks> kept_step_tasks(const traces::Trace& trace, const Group& g, int n_steps, int first_step,
                                         int device_tasks) {
  const int64_t rank = g.ranks.front();
  StepTasks at(static_cast<size_t>(n_steps), std::vector<const Event*>(static_cast<size_t>(device_tasks)));
  for (const auto& [idx, st] : g.assigned) {
    if (trace.events[idx].rank == rank && st.first >= first_step && st.second < device_tasks)
      at[static_cast<size_t>(st.first - first_step)][static_cast<size_t>(st.second)] = &trace.events[idx];
  }
  for (const auto& row : at) {
    for (const Event* e : row)
      if (e == nullptr) return std::nullopt;
  }
  return at;
}

// The rank's kept steps and what a task's idle gap in each is measured against.
struct KeptSteps {
  const StepTasks& at;
  const std::map<int, StepEvents>& steps;
  int first_step;
  std::vector<std::vector<std::pair<double, int>>> ends;  // per step, sorted (end, task)
  std::vector<int> stream_prev, stream_last;              // the task before each on its stream; each stream's last
};

KeptSteps measure_kept_steps(const StepTasks& at, const std::map<int, StepEvents>& steps, int first_step,
                             const models::Plan& plan, int device_tasks) {
  KeptSteps k{at, steps, first_step, {}, {}, {}};
  const int n_steps = static_cast<int>(at.size());
  k.ends.resize(static_cast<size_t>(n_steps));
  for (int s = 0; s < n_steps; ++s) {
    for (int d = 0; d < device_tasks; ++d)
      k.ends[static_cast<size_t>(s)].emplace_back(at[static_cast<size_t>(s)][static_cast<size_t>(d)]->end_us(), d);
    std::sort(k.ends[static_cast<size_t>(s)].begin(), k.ends[static_cast<size_t>(s)].end());
  }
  k.stream_prev.assign(static_cast<size_t>(device_tasks), -1);
  k.stream_last.assign(plan.streams.size(), -1);
  for (int b = 0; b < device_tasks; ++b) {
    const models::Task& task = plan.tasks[static_cast<size_t>(b)];
    k.stream_prev[static_cast<size_t>(b)] = k.stream_last[static_cast<size_t>(task.stream)];
    k.stream_last[static_cast<size_t>(task.stream)] = b;
  }
  return k;
}

// Candidate -> the steps whose idle gap before task `b` it ended in (on another stream).
std::map<int, int> idle_gap_scores(const KeptSteps& k, const models::Plan& plan, const std::set<int>& cut_tasks,
                                   const DerivePlanOptions& options, int b) {
  const models::Task& task = plan.tasks[static_cast<size_t>(b)];
  std::map<int, int> score;
  for (int s = 0; s < static_cast<int>(k.at.size()); ++s) {
    const auto& row = k.at[static_cast<size_t>(s)];
    const Event& e = *row[static_cast<size_t>(b)];
    const int p = k.stream_prev[static_cast<size_t>(b)];
    double idle_from = p >= 0 ? row[static_cast<size_t>(p)]->end_us() : k.steps.at(s + k.first_step).start_us;
    if (p < 0 && s > 0) {
      const int last = k.stream_last[static_cast<size_t>(task.stream)];
      idle_from = std::max(idle_from, k.at[static_cast<size_t>(s - 1)][static_cast<size_t>(last)]->end_us());
    }
    const auto launched = e.launch_end_us();
    if (cut_tasks.count(b) != 0 && launched && *launched > idle_from) idle_from = *launched;
    if (e.ts_us - idle_from <= options.min_wait_us) continue;
    const auto& list = k.ends[static_cast<size_t>(s)];
    for (auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(idle_from - kSlack, -1));
         it != list.end() && it->first <= e.ts_us + kSlack; ++it) {
      if (plan.tasks[static_cast<size_t>(it->second)].stream != task.stream) ++score[it->second];
    }
  }
  return score;
}

// The candidate of `score` that never ended after task `b` started with the most steps, the latest in the
// template step on a tie; -1 for none.
int best_dependency(const KeptSteps& k, std::map<int, int>& score, int b, int tmpl) {
  const auto valid = [&](int d) {
    for (const auto& row : k.at) {
      if (row[static_cast<size_t>(d)]->end_us() > row[static_cast<size_t>(b)]->ts_us + kSlack) return false;
    }
    return true;
  };
  int best = -1;
  const auto& tmpl_row = k.at[static_cast<size_t>(tmpl - k.first_step)];
  for (const auto& [d, n] : score) {
    if (!valid(d)) continue;
    const int bn = best >= 0 ? score[best] : 0;
    if (best < 0 || n > bn ||
        (n == bn && tmpl_row[static_cast<size_t>(d)]->end_us() > tmpl_row[static_cast<size_t>(best)]->end_us()))
      best = d;
  }
  return best;
}

}  // namespace

void check_group_dependencies(const traces::Trace& trace, const RankSteps& ranks, int tmpl, int first_step,
                              const DerivePlanOptions& options, Group* g) {
  const std::map<int, StepEvents>& steps = ranks.at(g->ranks.front());
  const int step_count = static_cast<int>(steps.size());
  models::Plan& plan = g->plan;
  const int device_tasks = g->first_host >= 0 ? g->first_host : static_cast<int>(plan.tasks.size());
  const auto at = kept_step_tasks(trace, *g, step_count - first_step, first_step, device_tasks);
  if (!at) return;
  const KeptSteps k = measure_kept_steps(*at, steps, first_step, plan, device_tasks);
  for (int b = 0; b < device_tasks; ++b) {
    std::map<int, int> score = idle_gap_scores(k, plan, g->cut_tasks, options, b);
    const int best = best_dependency(k, score, b, tmpl);
    models::Task& task = plan.tasks[static_cast<size_t>(b)];
    std::vector<int> deps;
    for (int d : task.deps)
      if (d >= device_tasks) deps.push_back(d);  // host tasks stay
    if (best >= 0) {
      deps.push_back(best);
      task.prev_step_deps.clear();
    }
    task.deps = std::move(deps);
  }
}

}  // namespace clustertwin::models::kineto_detail
