#include "sim/mix/job_run.h"

#include <utility>

#include "sim/core/plan_run.h"
#include "sim/flowtrain/flowtrain_job.h"

namespace clustertwin::sim::mix {
namespace {

// A step plan's streams, as `sim plan` runs them.
class PlanJobRun : public JobRun {
 public:
  PlanJobRun(const JobSetup& job, Platform& view)
      : job_(job), run_(job.plan, view, job.options, resolve_fidelity(job.options), job.seconds, job.stride) {}
  void start() override { run_.start(); }
  Status check_complete() const override { return run_.check_complete(); }
  SimResult result() const override { return run_.result(job_.profile); }
  Status write_trace(const std::string& path) override {
    return write_run_trace(job_.plan, job_.profile, job_.options, result(), std::move(run_.events()), path);
  }

 private:
  const JobSetup& job_;
  PlanRun run_;
};

// FlowTrain's orchestrator, as `sim flowtrain` runs it.
class FlowTrainJobRun : public JobRun {
 public:
  FlowTrainJobRun(const JobSetup& job, Platform& view) : job_(job), view_(view) {}
  void start() override { actors_ = job_.flowtrain->start(view_); }
  Status check_complete() const override { return actors_->status(); }
  SimResult result() const override {
    const flowtrain::FlowTrainRow row = actors_->row();
    SimResult r;
    r.system = "flowtrain";
    r.variant = row.mode;
    r.platform = job_.profile.name;
    r.workers = row.workers;
    r.steps = job_.options.steps;
    r.warmup_steps = job_.options.warmup_steps;
    r.drain_steps = job_.options.drain_steps;
    r.fidelity = Fidelity::kFlow;  // its reduce-scatters run as aggregate flows, its transfers as one flow each
    // `sim flowtrain`'s own figure: the mean of the steps after the first.
    r.step_time_s = row.step_s;
    r.step_end_s = actors_->step_ends_s();
    r.mfu = row.mfu;
    r.simulated_workers = row.workers;
    return r;
  }
  Status write_trace(const std::string& path) override {
    return flowtrain::write_flowtrain_trace(actors_->row(), job_.profile.name, path);
  }

 private:
  const JobSetup& job_;
  Platform& view_;
  std::unique_ptr<flowtrain::FlowTrainActors> actors_;
};

}  // namespace

std::unique_ptr<JobRun> JobRun::make(const JobSetup& job, Platform& view) {
  if (job.flowtrain) return std::make_unique<FlowTrainJobRun>(job, view);
  return std::make_unique<PlanJobRun>(job, view);
}

}  // namespace clustertwin::sim::mix
