// Step 1 of `clustertwin plan mix` (sim/mix/mix_plan.h): a job sized alone
// by the single-system search.

#include <map>
#include <mutex>

#include "common/parallel.h"
#include "common/text.h"
#include "sim/core/capacity_search.h"
#include "sim/mix/mix_plan.h"

namespace clustertwin::sim::mix {
namespace {

// `job` alone at `workers`, packed from node 0: a mix of that job only, without failures.
MixSpec alone_mix(const MixSpec& mix, const JobSpec& job, int workers) {
  MixSpec one = mix;
  one.failures = FailureSpec{};
  one.jobs = {job};
  one.jobs[0].workers = workers;
  one.jobs[0].checkpoint_every.clear();
  return one;
}

// `job`'s throughput alone at `workers`, packed from node 0, in the unit of its target.
StatusOr<double> alone_throughput(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile,
                                  uint64_t seed, int workers) {
  MixOptions mo;
  mo.placement = "packed";
  mo.seed = seed;
  mo.seed_given = true;
  mo.parallel = 1;
  mo.top_links = 0;
  auto r = run_mix(alone_mix(mix, job, workers), profile, mo);
  if (!r.is_ok()) return r.status();
  return job_throughput(job.target, workers, r->jobs[0].alone.step_time_s);
}

}  // namespace

Status size_job_alone(const MixSpec& mix, const JobSpec& job, const cluster::ClusterProfile& profile,
                      const MixPlanOptions& o, uint64_t seed, AloneSize* a, std::string* why_not) {
  std::map<int, double> seen;  // workers -> throughput
  std::mutex progress_lock;
  // Estimates and exact runs are the same simulation here: each count is run once.
  CapacityEvaluator evaluate = [&](const std::vector<std::pair<int, int>>& points, bool) {
    std::vector<StatusOr<double>> out(points.size(), Status::internal("not run"));
    parallel_for(points.size(), o.parallel, [&](size_t i) {
      const int w = points[i].second;
      if (seen.count(w)) {
        out[i] = seen.at(w);
        return;
      }
      out[i] = alone_throughput(mix, job, profile, seed, w);
      if (!out[i].is_ok()) return;
      if (o.progress) {
        std::lock_guard<std::mutex> lock(progress_lock);
        o.progress("plan mix: " + job.name + " alone at " + std::to_string(w) + " workers: " + with_thousands(*out[i]) +
                   " of " + with_thousands(job.target.value) + " " + target_unit_name(job.target.unit));
      }
    });
    std::vector<CapacityPoint> result;
    for (size_t i = 0; i < points.size(); ++i) {
      if (!out[i].is_ok()) return StatusOr<std::vector<CapacityPoint>>(out[i].status());
      if (!seen.count(points[i].second)) {
        seen[points[i].second] = *out[i];
        ++a->points;
      }
      CapacityPoint p;
      p.throughput = *out[i];
      result.push_back(p);
    }
    return StatusOr<std::vector<CapacityPoint>>(std::move(result));
  };
  CapacityQuery q;
  q.families = {job.name};
  q.ladder = node_ladder(profile.devices_per_node, profile.devices());
  q.target_throughput = job.target.value;
  q.keep = 1;
  auto answer = search_capacity(q, evaluate);
  if (!answer.is_ok()) return answer.status().with_context(mix.file + ": " + job.field + " ('" + job.name + "')");
  const CapacityFamilyResult& r = answer->families.front();
  if (!r.feasible()) {
    a->workers = 0;
    *why_not = "job '" + job.name + "' alone " + r.why_not + ", short of its target of " +
               with_thousands(job.target.value) + " " + target_unit_name(job.target.unit);
    return Status::ok();
  }
  a->workers = r.answer.workers;
  a->throughput = r.answer.throughput;
  a->has_below = r.has_below;
  a->below_workers = r.below.workers;
  a->below_throughput = r.below.throughput;
  return Status::ok();
}

}  // namespace clustertwin::sim::mix
