// The process twin: the real controller's orchestrator on simulated
// processes sharing cores. One core and one worker make every job's time
// additive (the check on pricing and on the shared core); more cores run
// jobs in parallel; the same inputs give the same output; a job the costs
// do not price and recorded lengths that do not fit are refused.

#include "sim/flexmarl/process_twin.h"

#include <gtest/gtest.h>

#include <numeric>

namespace clustertwin::sim::flexmarl {
namespace {

namespace cf = clustertwin::models::flexmarl;

ProcessTwinSetup setup(cf::Framework f, int workers, int cores, int steps) {
  ProcessTwinSetup s;
  s.orchestrator.framework = f;
  s.orchestrator.workers = workers;
  s.orchestrator.queries = 2;
  s.orchestrator.group = 4;
  s.orchestrator.micro_batch = 4;
  s.orchestrator.rollout_batch = 4;
  s.orchestrator.trainers = 1;
  s.cores = cores;
  s.steps = steps;
  for (int k = 0; k < steps; ++k) {
    std::array<std::vector<int64_t>, cf::kTaskTurns> lengths;
    for (int q = 0; q < s.orchestrator.queries; ++q) {
      for (int j = 0; j < s.orchestrator.group; ++j) {
        lengths[0].push_back(cf::task_budget(s.orchestrator.task, 0, 0, k * s.orchestrator.queries + q, j));
        lengths[1].push_back(2);
        lengths[2].push_back(1);
      }
    }
    s.response_tokens.push_back(lengths);
  }
  return s;
}

// Every job kind of every agent at `fixed_s`, plus `per_gflop_s` per GFLOP for generate and train.
ProcessTwinCosts costs(double fixed_s, double per_gflop_s = 0) {
  ProcessTwinCosts c;
  for (cf::JobKind k : {cf::JobKind::kLoad, cf::JobKind::kGenerate, cf::JobKind::kTrain, cf::JobKind::kStep,
                        cf::JobKind::kSwapIn, cf::JobKind::kSwapOut}) {
    for (int a = 0; a < cf::kTaskTurns; ++a) {
      const bool flops = k == cf::JobKind::kGenerate || k == cf::JobKind::kTrain;
      c.keys[process_cost_key(k, a)] = ProcessKeyCost{fixed_s, flops ? per_gflop_s * 1e-9 : 0, 0};
    }
  }
  return c;
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

TEST(ProcessTwinTest, OneWorkerOnOneCoreTakesTheSumOfItsJobs) {
  auto r = run_process_twin(setup(cf::Framework::kSync, 1, 1, 2), costs(1e-3));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->step_s.size(), 2u);
  ASSERT_GT(r->posted, 0);
  EXPECT_EQ(r->jobs.size(), static_cast<size_t>(r->posted));
  EXPECT_NEAR(r->worker_cpu_s, static_cast<double>(r->posted) * 1e-3, 1e-12);
  EXPECT_NEAR(sum(r->step_s), r->worker_cpu_s, 1e-9);
}

TEST(ProcessTwinTest, TheControllerSharesTheCore) {
  ProcessTwinCosts c = costs(1e-3);
  c.controller_s_per_job = 1e-3;
  auto alone = run_process_twin(setup(cf::Framework::kSync, 1, 1, 2), costs(1e-3));
  auto shared = run_process_twin(setup(cf::Framework::kSync, 1, 1, 2), c);
  ASSERT_TRUE(alone.is_ok() && shared.is_ok());
  EXPECT_GT(sum(shared->step_s), sum(alone->step_s) * 1.5);
}

TEST(ProcessTwinTest, MoreCoresRunTheWorkersInParallel) {
  auto one = run_process_twin(setup(cf::Framework::kSync, 4, 1, 2), costs(1e-3, 1e-3));
  auto four = run_process_twin(setup(cf::Framework::kSync, 4, 4, 2), costs(1e-3, 1e-3));
  ASSERT_TRUE(one.is_ok() && four.is_ok());
  EXPECT_NEAR(one->worker_cpu_s, four->worker_cpu_s, 1e-12);  // the same jobs
  EXPECT_NEAR(sum(one->step_s), one->worker_cpu_s, 1e-9);     // one core: never idle, never faster
  EXPECT_LT(sum(four->step_s), 0.6 * sum(one->step_s));
  EXPECT_GE(sum(four->step_s), four->worker_cpu_s / 4 - 1e-12);
}

TEST(ProcessTwinTest, EveryFrameworkRunsAndIsDeterministic) {
  for (cf::Framework f : cf::all_frameworks()) {
    SCOPED_TRACE(std::string(cf::framework_name(f)));
    auto a = run_process_twin(setup(f, 5, 2, 2), costs(2e-3, 1e-2));
    auto b = run_process_twin(setup(f, 5, 2, 2), costs(2e-3, 1e-2));
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    ASSERT_TRUE(b.is_ok());
    EXPECT_EQ(a->step_s, b->step_s);
    ASSERT_EQ(a->jobs.size(), b->jobs.size());
    for (size_t i = 0; i < a->jobs.size(); ++i) {
      EXPECT_EQ(a->jobs[i].cost_key, b->jobs[i].cost_key);
      EXPECT_EQ(a->jobs[i].end_s, b->jobs[i].end_s);
    }
    int generates = 0;
    for (const ProcessJob& j : a->jobs)
      generates += j.cost_key == "flexmarl/generate/planner";
    EXPECT_GT(generates, 0);
  }
}

TEST(ProcessTwinTest, AJobWithoutACostIsRefused) {
  ProcessTwinCosts c = costs(1e-3);
  c.keys.erase("flexmarl/swap-in/checker");
  c.keys.erase("flexmarl/swap-in/solver");
  c.keys.erase("flexmarl/swap-in/planner");
  auto r = run_process_twin(setup(cf::Framework::kFlexMarl, 4, 2, 2), c);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("process twin: no cost for 'flexmarl/swap-in/"), std::string::npos)
      << r.status().message();
}

TEST(ProcessTwinTest, RecordedLengthsMustCoverTheSteps) {
  ProcessTwinSetup s = setup(cf::Framework::kSync, 2, 2, 2);
  s.steps = 3;
  EXPECT_EQ(validate(s, costs(1e-3)).message(), "config.response_tokens: 2 recorded steps for 3 simulated");
  s = setup(cf::Framework::kSync, 2, 2, 2);
  s.response_tokens[1][2].pop_back();
  EXPECT_EQ(validate(s, costs(1e-3)).message(), "config.response_tokens[1][2]: 7 lengths for a batch of 8");
  s = setup(cf::Framework::kSync, 2, 0, 2);
  EXPECT_EQ(validate(s, costs(1e-3)).message(), "cores 0: must be >= 1");
}

}  // namespace
}  // namespace clustertwin::sim::flexmarl
