// The orchestrator without any executor: a fake one runs each rank's jobs in
// order, one job at a time across the machine in the order they became
// runnable, with responses of a fixed length. Checks what every framework's
// schedule must guarantee: each sample rolled out and trained once, the
// step after its agent's whole batch, the micro-batch pipeline training
// before rollout ends (and its ablation not), swaps only apart from the
// rollout workers, the version check, the flop sizes.

#include "models/flexmarl/orchestrator.h"

#include <gtest/gtest.h>

#include <bit>
#include <deque>
#include <set>

namespace clustertwin::models::flexmarl {
namespace {

class FakeExecutor : public JobSink {
 public:
  Status post(const Job& job) override {
    posted.push_back(job);
    runnable.push_back(job.rank);
    return Status::ok();
  }

  // Runs jobs until the step is done; each completion answers the oldest
  // job of the rank that became runnable first.
  Status run_step(Orchestrator& o, int step) {
    CT_RETURN_IF_ERROR(o.begin_step(step, *this));
    while (!o.step_done()) {
      if (runnable.empty()) return Status::internal("no job runnable before the step is done");
      const int rank = runnable.front();
      runnable.pop_front();
      const Job* job = o.front(rank);
      if (job == nullptr) return Status::internal("a runnable rank without a job");
      Completion c;
      c.kind = job->kind;
      c.version = job->kind == JobKind::kStep ? job->version + 1 : job->version - stale;
      if (job->kind == JobKind::kGenerate) {
        generate_order.push_back(static_cast<int>(completed.size()));
        for (size_t i = 0; i < job->samples.size(); ++i)
          c.responses.push_back(std::vector<int64_t>(3, 1));
      }
      if (job->kind == JobKind::kTrain) {
        for (int s : job->samples)
          trained.push_back(o.samples()[static_cast<size_t>(s)].id);
      }
      completed.push_back(*job);
      CT_RETURN_IF_ERROR(o.complete(rank, std::move(c), *this));
    }
    return Status::ok();
  }

  std::vector<Job> posted, completed;
  std::deque<int> runnable;
  std::vector<SampleId> trained;
  std::vector<int> generate_order;
  int64_t stale = 0;  // versions the rollouts run behind the posted one
};

OrchestratorOptions options(Framework f, int workers) {
  OrchestratorOptions o;
  o.framework = f;
  o.workers = workers;
  o.queries = 4;
  o.group = 4;
  o.micro_batch = 4;
  o.rollout_batch = 4;
  o.trainers = 1;
  return o;
}

TEST(OrchestratorTest, EveryFrameworkTrainsEachSampleOnceAndSteps) {
  for (Framework f : all_frameworks()) {
    SCOPED_TRACE(std::string(framework_name(f)));
    auto o = Orchestrator::create(options(f, 5));
    ASSERT_TRUE(o.is_ok()) << o.status().message();
    FakeExecutor x;
    ASSERT_TRUE(o->start(x).is_ok());
    for (int step = 0; step < 2; ++step) {
      x.trained.clear();
      ASSERT_TRUE(x.run_step(*o, step).is_ok());
      std::set<std::pair<int, SampleId>> once;
      for (const SampleId& id : x.trained)
        EXPECT_TRUE(once.insert({id.turn, id}).second) << id.str() << " trained twice";
      EXPECT_EQ(once.size(), 3u * 16u);
      for (int a = 0; a < Orchestrator::kAgents; ++a)
        EXPECT_EQ(o->version(a), step + 1);
      EXPECT_EQ(o->generated_tokens(), 3 * 16 * 3);
    }
    const bool swaps = separates_trainers(f);
    EXPECT_EQ(o->counts().swaps > 0, swaps);
  }
}

TEST(OrchestratorTest, MicroBatchesTrainBeforeRolloutEndsOnlyWithThePipeline) {
  for (Framework f : {Framework::kFlexMarl, Framework::kNoAsync}) {
    auto o = Orchestrator::create(options(f, 5));
    ASSERT_TRUE(o.is_ok());
    FakeExecutor x;
    ASSERT_TRUE(x.run_step(*o, 0).is_ok());
    int first_train = -1, last_generate = -1;
    for (size_t i = 0; i < x.completed.size(); ++i) {
      if (x.completed[i].kind == JobKind::kTrain && first_train < 0) first_train = static_cast<int>(i);
      if (x.completed[i].kind == JobKind::kGenerate) last_generate = static_cast<int>(i);
    }
    ASSERT_GE(first_train, 0);
    if (f == Framework::kFlexMarl) {
      EXPECT_LT(first_train, last_generate) << "the pipeline trains a rewarded micro-batch during rollout";
    } else {
      // noasync: an agent trains once its whole batch is complete; the
      // checker's batch completes last, with the last rollout.
      for (size_t i = 0; i < x.completed.size(); ++i) {
        const Job& j = x.completed[i];
        if (j.kind != JobKind::kTrain) continue;
        for (size_t k = i + 1; k < x.completed.size(); ++k) {
          EXPECT_FALSE(x.completed[k].kind == JobKind::kGenerate && x.completed[k].agent == j.agent)
              << "agent " << j.agent << " rolled out after its training started";
        }
      }
    }
  }
}

TEST(OrchestratorTest, SyncStepsOnEveryWorkerAsOneAllReduce) {
  auto o = Orchestrator::create(options(Framework::kSync, 4));
  ASSERT_TRUE(o.is_ok());
  FakeExecutor x;
  ASSERT_TRUE(o->start(x).is_ok());
  ASSERT_TRUE(x.run_step(*o, 0).is_ok());
  int steps = 0;
  for (const Job& j : x.posted) {  // the step ends with the publish; the other members finish after it
    if (j.kind != JobKind::kStep) continue;
    ++steps;
    EXPECT_EQ(std::popcount(static_cast<uint64_t>(j.members)), 4);
    EXPECT_DOUBLE_EQ(j.scale, 1.0 / 16);
  }
  EXPECT_EQ(steps, 3 * 4);
}

// Agent-centric binding: with several trainers, an agent with ready
// micro-batches is copied to idle trainers (replicas) that step together.
TEST(OrchestratorTest, SeveralTrainersHoldReplicasThatStepTogether) {
  OrchestratorOptions opt = options(Framework::kFlexMarl, 7);
  opt.trainers = 3;
  opt.queries = 8;  // 32 samples per agent: 8 micro-batches
  auto o = Orchestrator::create(opt);
  ASSERT_TRUE(o.is_ok());
  FakeExecutor x;
  for (int step = 0; step < 2; ++step) {
    x.trained.clear();
    ASSERT_TRUE(x.run_step(*o, step).is_ok());
    EXPECT_EQ(x.trained.size(), 3u * 32u);
  }
  int replicated = 0;
  for (const Job& j : x.posted) {
    if (j.kind == JobKind::kStep) {
      replicated += std::popcount(static_cast<uint64_t>(j.members)) > 1;
      EXPECT_TRUE(j.return_state);
      EXPECT_GE(j.rank, 5) << "trainers are the last workers";
    }
    if (j.kind == JobKind::kTrain) {
      EXPECT_GE(j.rank, 5);
    }
  }
  EXPECT_GT(replicated, 0) << "no agent was ever trained on two trainers at once";
}

TEST(OrchestratorTest, AStaleRolloutIsRefusedByTheStore) {
  auto o = Orchestrator::create(options(Framework::kFlexMarl, 5));
  ASSERT_TRUE(o.is_ok());
  FakeExecutor x;
  ASSERT_TRUE(x.run_step(*o, 0).is_ok());
  x.stale = 1;  // every rollout of step 1 reports version 0
  const Status s = x.run_step(*o, 1);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("a rollout on a stale policy"), std::string::npos) << s.message();
}

TEST(OrchestratorTest, ACompletionOfTheWrongKindIsInternal) {
  auto o = Orchestrator::create(options(Framework::kSync, 2));
  ASSERT_TRUE(o.is_ok());
  FakeExecutor x;
  ASSERT_TRUE(o->start(x).is_ok());  // swap-ins first
  Completion c;
  c.kind = JobKind::kTrain;
  const Status s = o->complete(1, c, x);
  EXPECT_EQ(s.code(), Status::Code::kInternal);
  EXPECT_EQ(s.message(), "flexmarl controller: a finished train from rank 1 for swap-in");
}

TEST(OrchestratorTest, TooFewWorkersForTheRolloutPoolAreRefused) {
  auto o = Orchestrator::create(options(Framework::kFlexMarl, 3));
  ASSERT_FALSE(o.is_ok());
  EXPECT_EQ(o.status().message(),
            "flexmarl flexmarl: 3 workers with 1 trainers leave 2 rollout workers (need one per agent, 3)");
}

TEST(OrchestratorTest, PositionsCountPaddingPerPromptLength) {
  // Two prompts of length 5 (responses 2 and 7: both run 7), one of 3 (response 4).
  EXPECT_EQ(generate_positions({5, 5, 3}, {2, 7, 4}), 2 * (5 + 7 - 1) + 1 * (3 + 4 - 1));
  EXPECT_EQ(train_positions({10, 4, 6}), 3 * 9);
  EXPECT_EQ(train_positions({}), 0);
}

TEST(OrchestratorTest, GroupAdvantagesAreStandardised) {
  auto adv = group_advantages({1, 3, 5, 5}, 2);
  ASSERT_TRUE(adv.is_ok());
  EXPECT_NEAR((*adv)[0], -1, 1e-5);
  EXPECT_NEAR((*adv)[1], 1, 1e-5);
  EXPECT_EQ((*adv)[2], 0);
  EXPECT_FALSE(group_advantages({1, 2, 3}, 2).is_ok());
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
