#include "sim/mix/mix_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "common/parallel.h"
#include "common/text.h"
#include "sim/mix/placement.h"

namespace clustertwin::sim::mix {
namespace {

const std::vector<std::string>& policies() {
  static const std::vector<std::string> all = {"packed", "spread", "random", "isolated"};
  return all;
}

// The simulations run_mix runs for a mix of `jobs` jobs: the mix, and each job alone when there are several.
int simulations_of(size_t jobs) {
  return jobs == 1 ? 1 : static_cast<int>(jobs) + 1;
}

int total_nodes(const cluster::ClusterProfile& profile, const std::vector<int>& workers) {
  int nodes = 0;
  for (int w : workers)
    nodes += nodes_needed(profile, w);
  return nodes;
}

// "a 3, b 4": the jobs' nodes.
std::string sizes_text(const MixSpec& mix, const cluster::ClusterProfile& profile, const std::vector<int>& workers) {
  std::string out;
  for (size_t j = 0; j < workers.size(); ++j)
    out += (j ? ", " : "") + mix.jobs[j].name + " " + std::to_string(nodes_needed(profile, workers[j]));
  return out;
}

// The planner's state: the mix, its profile and options, and every mix run so far.
class Planner {
 public:
  Planner(const MixSpec& mix, const cluster::ClusterProfile& profile, const MixPlanOptions& o, MixPlan* plan)
      : mix_(mix), profile_(profile), o_(o), plan_(plan) {}

  // Step 1: each job with a target and no workers, alone, by the single-system search.
  Status size_alone() {
    for (size_t j = 0; j < mix_.jobs.size(); ++j) {
      const JobSpec& job = mix_.jobs[j];
      AloneSize& a = plan_->alone[j];
      a.workers = job.workers;
      if (job.workers > 0) continue;
      a.searched = true;
      CT_RETURN_IF_ERROR(size_job_alone(mix_, job, profile_, o_, plan_->seed, &a, &plan_->why_not));
      plan_->simulations += a.points;
      if (a.workers == 0) return Status::ok();  // why_not is set
    }
    return Status::ok();
  }

  // Steps 2 to 4 (sim/mix/mix_plan.h).
  Status size_together() {
    std::vector<int> current;
    for (const AloneSize& a : plan_->alone)
      current.push_back(a.workers);
    plan_->lower_bound_nodes = total_nodes(profile_, current);
    if (plan_->lower_bound_nodes > profile_.nodes) {
      plan_->why_not = "the jobs' sizes alone take " + std::to_string(plan_->lower_bound_nodes) + " nodes (" +
                       sizes_text(mix_, profile_, current) + "), more than profile '" + profile_.name + "' has (" +
                       std::to_string(profile_.nodes) + ")";
      return Status::ok();
    }
    CT_RETURN_IF_ERROR(run({current}));
    std::optional<std::vector<int>> found;
    if (meets(current)) found = current;
    while (!found) {
      std::vector<std::vector<int>> candidates;
      CT_RETURN_IF_ERROR(grow(current, &candidates));
      if (candidates.empty()) return Status::ok();  // why_not is set
      CT_RETURN_IF_ERROR(run(candidates));
      // The fewest nodes that meet every target (candidates are in job order); else the closest to meeting.
      for (const std::vector<int>& c : candidates) {
        if (meets(c) && (!found || total_nodes(profile_, c) < total_nodes(profile_, *found))) found = c;
      }
      if (found) break;
      const std::vector<int>* closest = &candidates.front();
      for (const std::vector<int>& c : candidates) {
        if (best_worst(c) > best_worst(*closest) ||
            (best_worst(c) == best_worst(*closest) && total_nodes(profile_, c) < total_nodes(profile_, *closest)))
          closest = &c;
      }
      current = *closest;
    }
    // Step 4: one node fewer, under every policy; a split that meets moves the answer down.
    for (bool moved = true; moved;) {
      moved = false;
      plan_->below.clear();
      const std::vector<std::vector<int>> down = below(*found);
      CT_RETURN_IF_ERROR(run(down));
      for (const std::vector<int>& c : down) {
        if (meets(c)) {
          found = c;
          moved = true;
          break;
        }
        for (const std::string& p : plan_->placements)
          plan_->below.push_back(tries_.at({c, p}));
      }
    }
    plan_->feasible = true;
    for (const std::string& p : plan_->placements) {
      const MixTry& t = tries_.at({*found, p});
      plan_->at_answer.push_back(t);
      if (t.meets && !plan_->answer.meets) plan_->answer = t;
    }
    return Status::ok();
  }

 private:
  // The sizes one node below `c`: every split of its nodes less one among the sized jobs, each at least its
  // alone size (when there are at most kMaxSplits), else each grown job one node smaller.
  std::vector<std::vector<int>> below(const std::vector<int>& c) {
    constexpr size_t kMaxSplits = 32;
    const int node = profile_.devices_per_node;
    std::vector<size_t> sized;
    std::vector<int> base;
    for (size_t j = 0; j < c.size(); ++j) {
      base.push_back(plan_->alone[j].workers);
      if (plan_->alone[j].searched) sized.push_back(j);
    }
    const int extra = total_nodes(profile_, c) - 1 - plan_->lower_bound_nodes;
    std::vector<std::vector<int>> out;
    if (extra < 0 || sized.empty()) return out;
    // Every way to hand `extra` nodes to the sized jobs, in lexicographic order of the first job's share.
    std::vector<int> share(sized.size(), 0);
    std::function<void(size_t, int)> deal = [&](size_t k, int left) {
      if (out.size() > kMaxSplits) return;
      if (k + 1 == sized.size()) {
        share[k] = left;
        std::vector<int> split = base;
        for (size_t i = 0; i < sized.size(); ++i)
          split[sized[i]] += share[i] * node;
        out.push_back(std::move(split));
        return;
      }
      for (int n = left; n >= 0; --n) {
        share[k] = n;
        deal(k + 1, left - n);
      }
    };
    deal(0, extra);
    plan_->below_every_split = out.size() <= kMaxSplits;
    if (plan_->below_every_split) return out;
    out.clear();
    for (size_t j : sized) {
      if (c[j] <= base[j]) continue;
      std::vector<int> split = c;
      split[j] -= node;
      out.push_back(std::move(split));
    }
    return out;
  }

  MixOptions mix_options(const std::string& placement, int top_links) const {
    MixOptions mo;
    mo.placement = placement;
    mo.seed = plan_->seed;
    mo.seed_given = true;
    mo.parallel = 1;
    mo.top_links = top_links;
    return mo;
  }

  // Runs every configuration of `configs` under every policy, those not run yet, `parallel` mixes at a time.
  Status run(const std::vector<std::vector<int>>& configs) {
    std::vector<MixTry> todo;
    for (const std::vector<int>& c : configs) {
      for (const std::string& p : plan_->placements) {
        if (tries_.count({c, p})) continue;
        if (std::any_of(todo.begin(), todo.end(), [&](const MixTry& t) { return t.workers == c && t.placement == p; }))
          continue;
        MixTry t;
        t.workers = c;
        t.nodes = total_nodes(profile_, c);
        t.placement = p;
        todo.push_back(std::move(t));
      }
    }
    std::vector<Status> status(todo.size());
    std::mutex progress_lock;
    parallel_for(todo.size(), o_.parallel, [&](size_t i) {
      status[i] = run_one(&todo[i]);
      if (o_.progress && status[i].is_ok()) {
        std::lock_guard<std::mutex> lock(progress_lock);
        o_.progress("plan mix: " + std::to_string(todo[i].nodes) + " nodes (" +
                    sizes_text(mix_, profile_, todo[i].workers) + ") " + todo[i].placement + ": " +
                    (!todo[i].placed ? "not placed, " + todo[i].why
                     : todo[i].meets ? "every target met"
                                     : "misses, " + todo[i].why));
      }
    });
    for (size_t i = 0; i < todo.size(); ++i) {
      CT_RETURN_IF_ERROR(status[i]);
      if (todo[i].placed) plan_->simulations += simulations_of(mix_.jobs.size());
      tries_[{todo[i].workers, todo[i].placement}] = todo[i];
      plan_->tries.push_back(std::move(todo[i]));
    }
    return Status::ok();
  }

  Status run_one(MixTry* t) const {
    MixSpec sized = mix_;
    for (size_t j = 0; j < sized.jobs.size(); ++j)
      sized.jobs[j].workers = t->workers[j];
    std::string policy = t->placement;
    if (policy == "isolated") {
      auto nodes = isolated_placement(sized, profile_);
      if (!nodes) {
        t->why = "no pods left to give each job pods of its own";
        return Status::ok();
      }
      for (size_t j = 0; j < sized.jobs.size(); ++j)
        sized.jobs[j].nodes = (*nodes)[j];
      policy = "packed";  // every job has its nodes now
    }
    CT_RETURN_IF_ERROR(check_mix(sized, profile_));
    auto result = run_mix(sized, profile_, mix_options(policy, o_.top_links));
    if (!result.is_ok()) return result.status();
    t->placed = true;
    t->result = std::move(result).value();
    t->result.placement = t->placement;
    // The pods the jobs run on, and the nodes in them, idle ones included.
    const std::vector<int> pod = pod_of_nodes(profile_);
    std::set<int> pods;
    for (const JobResult& r : t->result.jobs) {
      for (int n : r.nodes)
        pods.insert(pod[n]);
    }
    for (int n = 0; n < profile_.nodes; ++n)
      t->pod_nodes += pods.count(pod[n]) ? 1 : 0;
    t->worst = 1;
    for (size_t j = 0; j < sized.jobs.size(); ++j) {
      const JobTarget& target = sized.jobs[j].target;
      if (!target.present()) continue;
      const double got = job_throughput(target, t->workers[j], t->result.jobs[j].mixed.step_time_s);
      t->worst = std::min(t->worst, got / target.value);
      if (got >= target.value) continue;
      t->why += (t->why.empty() ? "" : "; ") + sized.jobs[j].name + " " + with_thousands(got) + " of " +
                with_thousands(target.value) + " " + target_unit_name(target.unit);
    }
    t->meets = t->worst >= 1;
    return Status::ok();
  }

  bool meets(const std::vector<int>& c) const {
    return std::any_of(plan_->placements.begin(), plan_->placements.end(), [&](const std::string& p) {
      return tries_.at({c, p}).meets;
    });
  }

  // The best policy's worst ratio (-1 when no policy placed the jobs).
  double best_worst(const std::vector<int>& c) const {
    double best = -1;
    for (const std::string& p : plan_->placements) {
      const MixTry& t = tries_.at({c, p});
      if (t.placed) best = std::max(best, t.worst);
    }
    return best;
  }

  // The candidates grown from `c`: each sized job that misses under the best policy, by one node or to what
  // its best per-worker rate in the mix (over the policies) proves it needs, whichever is more.
  Status grow(const std::vector<int>& c, std::vector<std::vector<int>>* out) {
    const MixTry* best = nullptr;
    for (const std::string& p : plan_->placements) {
      const MixTry& t = tries_.at({c, p});
      if (t.placed && (best == nullptr || t.worst > best->worst)) best = &t;
    }
    if (best == nullptr) {
      plan_->why_not = "no policy tried can place " + std::to_string(total_nodes(profile_, c)) + " nodes (" +
                       sizes_text(mix_, profile_, c) + ")";
      return Status::ok();
    }
    const int node = profile_.devices_per_node;
    std::string fixed_miss;
    for (size_t j = 0; j < c.size(); ++j) {
      const JobTarget& target = mix_.jobs[j].target;
      if (!target.present()) continue;
      if (job_throughput(target, c[j], best->result.jobs[j].mixed.step_time_s) >= target.value) continue;
      if (!plan_->alone[j].searched) {
        if (fixed_miss.empty()) fixed_miss = mix_.jobs[j].name;
        continue;
      }
      double rate = 0;  // the job's best throughput per worker in the mix, over the policies
      for (const std::string& p : plan_->placements) {
        const MixTry& t = tries_.at({c, p});
        if (t.placed) rate = std::max(rate, job_throughput(target, c[j], t.result.jobs[j].mixed.step_time_s) / c[j]);
      }
      std::vector<int> g = c;
      const double needed = rate > 0 ? target.value / rate : 0;
      g[j] = std::max(c[j] + node, static_cast<int>(std::ceil(needed / node - 1e-9)) * node);
      if (total_nodes(profile_, g) <= profile_.nodes) out->push_back(std::move(g));
    }
    if (!out->empty()) return Status::ok();
    plan_->why_not =
        !fixed_miss.empty()
            ? "job '" + fixed_miss + "' (workers fixed by the file) misses its target under every policy tried at " +
                  std::to_string(total_nodes(profile_, c)) + " nodes (best: " + best->placement + ", " + best->why + ")"
            : "at " + std::to_string(total_nodes(profile_, c)) + " nodes (" + sizes_text(mix_, profile_, c) + ") " +
                  best->placement + " misses (" + best->why + "), and growing a job that misses needs more than the " +
                  std::to_string(profile_.nodes) + " nodes of profile '" + profile_.name + "'";
    return Status::ok();
  }

  const MixSpec& mix_;
  const cluster::ClusterProfile& profile_;
  const MixPlanOptions& o_;
  MixPlan* plan_;
  std::map<std::pair<std::vector<int>, std::string>, MixTry> tries_;
};

}  // namespace

std::string plan_placement_list() {
  std::string out;
  for (const std::string& p : policies())
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::optional<std::vector<std::vector<int>>> isolated_placement(const MixSpec& mix,
                                                                const cluster::ClusterProfile& profile) {
  const std::vector<int> pod = pod_of_nodes(profile);
  std::vector<bool> pod_taken(pod.empty() ? 0 : pod.back() + 1, false);
  for (const JobSpec& job : mix.jobs) {
    for (int n : job.nodes)
      pod_taken[pod[n]] = true;
  }
  std::vector<std::vector<int>> out;
  int from = 0;  // the first node not yet considered
  for (const JobSpec& job : mix.jobs) {
    if (!job.nodes.empty()) {
      out.push_back(job.nodes);
      continue;
    }
    const int needed = nodes_needed(profile, job.workers);
    std::vector<int> nodes;
    for (int n = from; n < profile.nodes && static_cast<int>(nodes.size()) < needed; ++n) {
      if (pod_taken[pod[n]]) {
        nodes.clear();  // start again after the pod another job holds
        continue;
      }
      if (nodes.empty() && n > 0 && pod[n - 1] == pod[n]) continue;  // a job starts on a pod's first node
      nodes.push_back(n);
    }
    if (static_cast<int>(nodes.size()) < needed) return std::nullopt;
    for (int n : nodes)
      pod_taken[pod[n]] = true;
    from = nodes.back() + 1;
    out.push_back(std::move(nodes));
  }
  return out;
}

StatusOr<MixPlan> plan_mix(const MixSpec& mix, const cluster::ClusterProfile& profile, const MixPlanOptions& o) {
  MixPlan plan;
  plan.file = mix.file;
  plan.profile = profile.name;
  plan.profile_nodes = profile.nodes;
  plan.devices_per_node = profile.devices_per_node;
  plan.seed = o.seed_given ? o.seed : mix.seed;
  plan.jobs = mix.jobs;
  plan.alone.resize(mix.jobs.size());
  if (o.placements.empty()) return Status::invalid_argument("placements: give at least one policy");
  std::set<std::string> seen;
  for (const std::string& p : o.placements) {
    if (std::find(policies().begin(), policies().end(), p) == policies().end()) {
      return Status::invalid_argument("placements '" + p + "': unknown policy (allowed: " + plan_placement_list() +
                                      ")");
    }
    if (!seen.insert(p).second) return Status::invalid_argument("placements '" + p + "': given twice");
  }
  plan.placements = o.placements;
  // The fixed jobs against the profile, as `sim mix` checks them; sized jobs are checked as they are sized.
  MixSpec fixed = mix;
  fixed.jobs.clear();
  for (const JobSpec& job : mix.jobs) {
    if (job.workers > 0) fixed.jobs.push_back(job);
  }
  CT_RETURN_IF_ERROR(check_mix(fixed, profile));
  for (const JobSpec& job : mix.jobs) {
    if (job.workers == 0 && job.target.unit != JobTarget::Unit::kSamplesPerS) {
      return Status::invalid_argument(mix.file + ": field '" + job.field +
                                      ".workers': missing: give workers, or a samples_per_s target");
    }
  }
  Planner planner(mix, profile, o, &plan);
  CT_RETURN_IF_ERROR(planner.size_alone());
  if (!plan.why_not.empty()) return plan;
  CT_RETURN_IF_ERROR(planner.size_together());
  return plan;
}

}  // namespace clustertwin::sim::mix
