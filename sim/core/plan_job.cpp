#include "sim/core/plan_job.h"

#include <utility>

#include "sim/core/plan_run.h"

namespace clustertwin::sim {
namespace {

// A step plan's streams, as `sim plan` runs them.
class PlanJobRun : public TwinRun {
 public:
  PlanJobRun(const PlanJob& job, Platform& view, const std::vector<std::vector<double>>& seconds, int stride)
      : job_(job), run_(job.plan(), view, job.options(), resolve_fidelity(job.options()), seconds, stride) {}
  void start() override { run_.start(); }
  Status check_complete() const override { return run_.check_complete(); }
  SimResult result() const override { return run_.result(job_.profile()); }
  Status write_trace(const std::string& path) override {
    return write_run_trace(job_.plan(), job_.profile(), job_.options(), result(), std::move(run_.events()), path);
  }

 private:
  const PlanJob& job_;
  PlanRun run_;
};

}  // namespace

StatusOr<std::unique_ptr<PlanJob>> PlanJob::make(models::Plan plan, cluster::ClusterProfile profile, SimOptions options,
                                                 std::string runs) {
  std::unique_ptr<PlanJob> job(new PlanJob());
  job->plan_ = std::move(plan);
  job->profile_ = std::move(profile);
  job->options_ = std::move(options);
  job->runs_ = std::move(runs);
  auto seconds = price_plan(job->plan_, job->profile_, job->options_);
  if (!seconds.is_ok()) return seconds.status();
  job->seconds_ = std::move(seconds).value();
  job->stride_ =
      symmetric_world(job->plan_, job->profile_, job->options_, job->seconds_) ? job->profile_.devices_per_node : 1;
  return job;
}

std::unique_ptr<TwinRun> PlanJob::run_on(Platform& view) const {
  return std::make_unique<PlanJobRun>(*this, view, seconds_, stride_);
}

}  // namespace clustertwin::sim
