// One description of FlexMARL's behaviour, two executors: the cluster twin
// (sim/flexmarl) and the orchestrator (models/flexmarl/orchestrator.h, which
// the real controller and the process twin run) both take their decisions
// from models/flexmarl/schedule.h. On one workload (three agents answering
// in turns 0, 1, 2; batch 16 = 4 queries x group 4; micro-batch 4; two
// steps) each framework must take the same decisions in both: the order of
// the rollout phases, each agent's micro-batch boundaries and its publish
// points. Their timing differs (a paper-scale model against a fake executor
// that answers jobs in the order they were posted), so decisions of different
// agents may interleave differently; each agent's own sequence may not.

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "models/cluster/cluster_profile.h"
#include "models/flexmarl/orchestrator.h"
#include "models/flexmarl/schedule.h"
#include "sim/flexmarl/flexmarl_twin.h"

namespace clustertwin {
namespace {

using models::flexmarl::Decision;
using models::flexmarl::describe;
using models::flexmarl::Framework;

constexpr int kSteps = 2;
constexpr int kQueries = 4, kGroup = 4, kMicroBatch = 4;
constexpr int kBatch = kQueries * kGroup;

// The orchestrator's decisions with jobs answered in the order they were posted.
std::vector<Decision> orchestrator_decisions(Framework f) {
  models::flexmarl::OrchestratorOptions o;
  o.framework = f;
  o.workers = 5;  // flexmarl variants: a rollout worker per agent and two trainers
  o.trainers = 2;
  o.queries = kQueries;
  o.group = kGroup;
  o.micro_batch = kMicroBatch;
  o.rollout_batch = 4;
  auto orchestrator = models::flexmarl::Orchestrator::create(o);
  EXPECT_TRUE(orchestrator.is_ok()) << orchestrator.status().message();
  struct Fifo : models::flexmarl::JobSink {
    std::deque<int> ranks;
    Status post(const models::flexmarl::Job& job) override {
      ranks.push_back(job.rank);
      return Status::ok();
    }
  } sink;
  EXPECT_TRUE(orchestrator->start(sink).is_ok());
  for (int step = 0; step < kSteps; ++step) {
    Status s = orchestrator->begin_step(step, sink);
    while (s.is_ok() && !orchestrator->step_done()) {
      if (sink.ranks.empty()) {
        s = Status::internal("no job to answer before the step is done");
        break;
      }
      const int rank = sink.ranks.front();
      sink.ranks.pop_front();
      const models::flexmarl::Job* job = orchestrator->front(rank);
      models::flexmarl::Completion c;
      c.kind = job->kind;
      c.version = job->kind == models::flexmarl::JobKind::kStep ? job->version + 1 : job->version;
      if (job->kind == models::flexmarl::JobKind::kGenerate) c.responses.assign(job->samples.size(), {1, 1, 1});
      s = orchestrator->complete(rank, std::move(c), sink);
    }
    EXPECT_TRUE(s.is_ok()) << s.message();
  }
  return orchestrator->decisions();
}

std::vector<Decision> twin_decisions(Framework f) {
  sim::flexmarl::FlexMarlSetup setup;
  setup.efficiency.decode = 0.5;
  setup.workload = models::flexmarl::ma_workload();
  for (size_t a = 0; a < setup.workload.agents.size(); ++a)
    setup.workload.agents[a].turn = static_cast<int>(a);
  setup.workload.global_batch = kBatch;
  setup.workload.group = kGroup;
  setup.workload.micro_batch = kMicroBatch;
  setup.workload.max_response_tokens = 1024;
  setup.steps = kSteps;
  auto profile = cluster::load_cluster_profile("npu-768");
  EXPECT_TRUE(profile.is_ok()) << profile.status().message();
  auto row = sim::flexmarl::run_flexmarl(setup, *profile, f);
  EXPECT_TRUE(row.is_ok()) << row.status().message();
  return row.is_ok() ? row->decisions : std::vector<Decision>{};
}

std::vector<std::string> phases(const std::vector<Decision>& log) {
  std::vector<std::string> out;
  for (const Decision& d : log) {
    if (d.kind == Decision::Kind::kPhase) out.push_back(describe(d));
  }
  return out;
}

std::map<int, std::vector<std::string>> per_agent_training(const std::vector<Decision>& log) {
  std::map<int, std::vector<std::string>> out;
  for (const Decision& d : log) {
    if (d.kind != Decision::Kind::kPhase) out[d.agent].push_back(describe(d));
  }
  return out;
}

TEST(FlexMarlScheduleAgreementTest, TwinAndOrchestratorTakeTheSameDecisions) {
  for (Framework f : models::flexmarl::all_frameworks()) {
    SCOPED_TRACE(std::string(models::flexmarl::framework_name(f)));
    const std::vector<Decision> twin = twin_decisions(f);
    const std::vector<Decision> real = orchestrator_decisions(f);
    EXPECT_EQ(phases(twin), phases(real));
    EXPECT_EQ(per_agent_training(twin), per_agent_training(real));

    // What the schedule says each should be, so that agreement on nothing cannot pass.
    const bool phased = f == Framework::kSync || f == Framework::kMarti;
    // sync and marti: one phase per agent here (one agent per turn), each step: 3 x 2.
    EXPECT_EQ(phases(twin).size(), phased ? 3u * kSteps : 0u);
    // Each step an agent trains its 16 samples, in one batch (sync, marti) or micro-batches of 4, then publishes.
    std::vector<std::string> one_step;
    for (int k = 0; k < (phased ? 1 : kBatch / kMicroBatch); ++k)
      one_step.push_back(describe({Decision::Kind::kMicroBatch, 0, phased ? kBatch : kMicroBatch}));
    one_step.push_back(describe({Decision::Kind::kPublish, 0, kBatch}));
    std::vector<std::string> agent0;
    for (int step = 0; step < kSteps; ++step)
      agent0.insert(agent0.end(), one_step.begin(), one_step.end());
    EXPECT_EQ(per_agent_training(twin)[0], agent0);
  }
}

}  // namespace
}  // namespace clustertwin
