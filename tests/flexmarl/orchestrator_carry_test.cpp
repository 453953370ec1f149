// What the orchestrator carries across a step boundary (OrchestratorCarry,
// for `run flexmarl`'s checkpoints): an orchestrator resumed from another's
// carry posts the same next step, job for job, in every framework; a carry
// is refused with jobs in flight, and one that does not fit the options is
// refused naming the field.

#include <gtest/gtest.h>

#include <deque>

#include "models/flexmarl/orchestrator.h"

namespace clustertwin::models::flexmarl {
namespace {

// Runs each rank's jobs in the order they became runnable, with responses of
// a fixed length (deterministic, so two orchestrators in the same state post
// the same jobs).
class CarryExecutor : public JobSink {
 public:
  Status post(const Job& job) override {
    posted.push_back(job);
    runnable.push_back(job.rank);
    return Status::ok();
  }

  // Completes the oldest job of the rank that became runnable first, until none is left.
  Status run_all(Orchestrator& o) {
    while (!runnable.empty()) {
      const int rank = runnable.front();
      runnable.pop_front();
      const Job* job = o.front(rank);
      if (job == nullptr) return Status::internal("a runnable rank without a job");
      Completion c;
      c.kind = job->kind;
      c.version = job->kind == JobKind::kStep ? job->version + 1 : job->version;
      for (size_t i = 0; job->kind == JobKind::kGenerate && i < job->samples.size(); ++i)
        c.responses.push_back(std::vector<int64_t>(3 + static_cast<int64_t>(i % 2), 1));
      CT_RETURN_IF_ERROR(o.complete(rank, std::move(c), *this));
    }
    return Status::ok();
  }

  std::vector<Job> posted;
  std::deque<int> runnable;
};

OrchestratorOptions carry_options(Framework f) {
  OrchestratorOptions o;
  o.framework = f;
  o.workers = 6;
  o.queries = 4;
  o.group = 4;
  o.micro_batch = 2;
  o.rollout_batch = 3;
  o.trainers = 2;
  return o;
}

void expect_same_carry(const OrchestratorCarry& a, const OrchestratorCarry& b) {
  EXPECT_EQ(a.versions, b.versions);
  EXPECT_EQ(a.holders, b.holders);
  EXPECT_EQ(a.cached, b.cached);
  EXPECT_EQ(a.instance_agents, b.instance_agents);
  EXPECT_EQ(a.counts.swaps, b.counts.swaps);
  EXPECT_EQ(a.counts.weight_loads, b.counts.weight_loads);
  EXPECT_EQ(a.counts.jobs, b.counts.jobs);
}

TEST(OrchestratorCarryTest, AResumedOrchestratorPostsTheSameNextStep) {
  for (Framework f : all_frameworks()) {
    SCOPED_TRACE(std::string(framework_name(f)));
    auto first = Orchestrator::create(carry_options(f));
    ASSERT_TRUE(first.is_ok()) << first.status().message();
    CarryExecutor x;
    ASSERT_TRUE(first->start(x).is_ok());
    for (int step = 0; step < 2; ++step) {
      ASSERT_TRUE(first->begin_step(step, x).is_ok());
      ASSERT_TRUE(x.run_all(*first).is_ok());
    }
    auto carry = first->carry();
    ASSERT_TRUE(carry.is_ok()) << carry.status().message();
    EXPECT_EQ(carry->versions, (std::array<int64_t, kTaskTurns>{2, 2, 2}));  // one publish per agent and step
    auto second = Orchestrator::create(carry_options(f));
    ASSERT_TRUE(second.is_ok());
    ASSERT_TRUE(second->resume(*carry).is_ok());
    expect_same_carry(*second->carry(), *carry);
    // Step 2 on both: the same jobs, on the same ranks, in the same order.
    CarryExecutor a, b;
    ASSERT_TRUE(first->begin_step(2, a).is_ok());
    ASSERT_TRUE(a.run_all(*first).is_ok());
    ASSERT_TRUE(second->begin_step(2, b).is_ok());
    ASSERT_TRUE(b.run_all(*second).is_ok());
    ASSERT_EQ(a.posted.size(), b.posted.size());
    for (size_t i = 0; i < a.posted.size(); ++i) {
      EXPECT_EQ(a.posted[i].kind, b.posted[i].kind) << "job " << i;
      EXPECT_EQ(a.posted[i].rank, b.posted[i].rank) << "job " << i;
      EXPECT_EQ(a.posted[i].agent, b.posted[i].agent) << "job " << i;
      EXPECT_EQ(a.posted[i].version, b.posted[i].version) << "job " << i;
      EXPECT_EQ(a.posted[i].samples, b.posted[i].samples) << "job " << i;
    }
    expect_same_carry(*second->carry(), *first->carry());
  }
}

TEST(OrchestratorCarryTest, NoCarryWithJobsInFlight) {
  auto o = Orchestrator::create(carry_options(Framework::kSync));
  ASSERT_TRUE(o.is_ok());
  CarryExecutor x;
  ASSERT_TRUE(o->begin_step(0, x).is_ok());
  EXPECT_FALSE(o->quiescent());
  EXPECT_EQ(o->carry().status().message(), "flexmarl orchestrator: a checkpoint with jobs in flight");
}

TEST(OrchestratorCarryTest, ACarryThatDoesNotFitIsRefusedNamingTheField) {
  auto o = Orchestrator::create(carry_options(Framework::kFlexMarl));
  ASSERT_TRUE(o.is_ok());
  const OrchestratorCarry good = *o->carry();
  OrchestratorCarry ranks = good;
  ranks.cached.resize(3);
  EXPECT_EQ(o->resume(ranks).message(), "schedule.cached 3 ranks: this run has 7");
  OrchestratorCarry holder = good;
  holder.holders[1] = {2};  // rank 2 rolls out: the trainers are ranks 5 and 6
  EXPECT_EQ(o->resume(holder).message(), "schedule.holders 2: not a trainer rank of this run");
  OrchestratorCarry agent = good;
  agent.instance_agents[0] = 7;
  EXPECT_EQ(o->resume(agent).message(), "schedule.instance_agents 7: not an agent (0..2)");
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
