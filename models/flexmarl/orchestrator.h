#pragma once

// The decisions of FlexMARL's controller, apart from how its jobs run: one
// orchestrator, two executors. The real controller (real/flexmarl/
// controller.h) posts each job to a worker process as a message with its
// tensors; the process twin (sim/flexmarl/process_twin.h) runs it as a
// SimGrid activity on simulated processes sharing a machine's cores. Both
// report each job's completion back, in the order each rank's jobs were
// posted, and the orchestrator decides what comes next, framework by
// framework:
//
//   sync      colocated: each agent's engine on every worker (loaded when
//             its turn starts); agents answer turn by turn (a barrier
//             after each), then each agent trains in turn on all workers
//             (all-reduce)
//   marti     a rollout pool and a training pool (the last --trainers
//             workers): the pool rolls out turn by turn (a barrier after
//             each), then the agents train side by side on their trainers
//   flexmarl  workers split into rollout instances (at least one per agent,
//             allocated by each agent's decode work at the step's start,
//             then hierarchically load-balanced) and trainers bound to
//             whichever agent has a ready micro-batch (several at once:
//             replicas of its state copied from the controller's host,
//             all-reduced at the step); a micro-batch trains as soon as its rows
//             are complete, the optimizer step waits for the agent's batch
//   flexmarl-nobalance, flexmarl-noasync   the ablations
//
// It holds the experience store (the version check on every insert and
// read), the load balancer, the samples of the step (prompts, responses,
// rewards, advantages: the task of models/flexmarl/math_task.h) and the
// policy versions. Plain C++: no torch.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "models/flexmarl/experience_store.h"
#include "models/flexmarl/frameworks.h"
#include "models/flexmarl/load_balancer.h"
#include "models/flexmarl/math_task.h"
#include "models/flexmarl/schedule.h"

namespace clustertwin::models::flexmarl {

/// Whether the executor runs `framework` with rollout workers apart from
/// trainer workers that swap agents' state (flexmarl and its ablations).
/// sync and marti keep each trainer's state resident where it trains and
/// roll out on every worker (the cluster twin models marti's pools apart).
bool separates_trainers(Framework framework);

struct OrchestratorOptions {
  Framework framework = Framework::kFlexMarl;
  int workers = 1;                // ranks 1..workers; rank 0 is the controller
  int queries = 4;                // inputs per step
  int group = 4;                  // trajectories per input: GRPO's group
  int micro_batch = 4;            // samples per training job at most
  int rollout_batch = 8;          // requests per rollout job at most
  int trainers = 1;               // flexmarl variants: trainer workers (the last ones)
  double load_gap = 2;            // flexmarl variants: the balancer's threshold, requests
  bool token_normalised = false;  // dapo: the step divides by the batch's response tokens
  uint64_t seed = 0;
  /// The task's size: its budgets (what the requests may write). The small task by default, the only one the
  /// process twin and its calibration know.
  TaskSpec task = small_task();
};

enum class JobKind { kLoad, kGenerate, kTrain, kStep, kSwapIn, kSwapOut };
const char* job_kind_name(JobKind kind);  // "load", "generate", ... (the trace's cost keys)

/// One job for one worker rank.
struct Job {
  JobKind kind = JobKind::kLoad;
  int rank = 1;
  int agent = 0;
  int64_t version = 0;        // load, generate, train: the policy version it works at
  std::vector<int> samples;   // generate, train: indices into samples()
  int instance = -1;          // generate (flexmarl variants): the rollout instance
  int64_t members = 0;        // step: the bit mask of the ranks that step together (all-reduce)
  double scale = 0;           // step: what the summed gradient is multiplied by
  bool return_state = false;  // step: the publishing member sends the agent's new state back too
};

/// Where the orchestrator's jobs go.
class JobSink {
 public:
  virtual ~JobSink() = default;
  virtual Status post(const Job& job) = 0;
};

/// One request of the step and, once answered, its response.
struct TaskSample {
  SampleId id;
  int agent = 0;
  uint64_t key = 0;  // which response it gets: the same in every framework
  int budget = 1;
  std::vector<int64_t> prompt, response;
  int64_t version = -1;
  double reward = 0;
  bool rewarded = false;
  double advantage = 0;
};

/// A finished job as the executor reports it.
struct Completion {
  JobKind kind = JobKind::kLoad;
  int64_t version = 0;                          // generate: the version that ran; step: the new one
  std::vector<std::vector<int64_t>> responses;  // generate: one per sample of the job, in order
};

struct OrchestratorCounts {
  int64_t swaps = 0, reassignments = 0, migrations = 0, weight_loads = 0, jobs = 0;
};

/// What the orchestrator carries from one step to the next, for a
/// checkpoint: where every agent's weights and trainer state are, its
/// version, and the counts. The rest (samples, queues, the store's rows,
/// the phase) begins anew with each step, and between steps no job is in
/// flight, every trainer's gradients went into its publish, and the rollout
/// instances are idle.
struct OrchestratorCarry {
  std::array<int64_t, kTaskTurns> versions{};
  std::array<std::vector<int>, kTaskTurns>
      holders;                                 // flexmarl variants: trainer ranks with the current state, in order
  std::vector<std::map<int, int64_t>> cached;  // per rank 0..workers: agent -> weight version loaded there
  std::vector<int> instance_agents;            // flexmarl variants: each rollout instance's agent
  OrchestratorCounts counts;
};

/// GRPO's advantages: each reward minus its group's mean, over the group's
/// standard deviation (population; 1e-6 added). Consecutive groups of
/// `group` rewards; InvalidArgument when `group` does not divide the count.
StatusOr<std::vector<double>> group_advantages(const std::vector<double>& rewards, int group);

/// The positions a rollout job computes, padding included: the engine
/// batches requests of one prompt length and runs every row of a batch to
/// its longest response. prompts[i] and responses[i] are token counts.
int64_t generate_positions(const std::vector<int64_t>& prompts, const std::vector<int64_t>& responses);
/// The positions a training job computes: every row padded to the longest
/// sequence (prompt and response), less one (the last token predicts nothing).
int64_t train_positions(const std::vector<int64_t>& sequence_tokens);

class Orchestrator {
 public:
  /// InvalidArgument for options no executor can run (a flexmarl variant
  /// needs a rollout worker per agent besides its trainers).
  static StatusOr<Orchestrator> create(const OrchestratorOptions& options);

  const OrchestratorOptions& options() const { return o_; }
  static constexpr int kAgents = kTaskTurns;

  /// The initial placement: sync and marti swap each trainer's state in
  /// where it stays resident.
  Status start(JobSink& sink);
  /// Makes step `step`'s requests and posts the first jobs.
  Status begin_step(int step, JobSink& sink);
  /// Every agent's new weights published.
  bool step_done() const;

  /// The oldest job of `rank` not yet completed, nullptr when none.
  const Job* front(int rank) const;
  /// Completes `rank`'s oldest job and posts what follows. Internal when
  /// the completion does not answer that job; the store's error when a
  /// rollout ran a policy version other than the published one.
  Status complete(int rank, Completion completion, JobSink& sink);

  /// The step's samples (indices of Job::samples).
  const std::vector<TaskSample>& samples() const { return samples_; }
  int64_t version(int agent) const { return version_[static_cast<size_t>(agent)]; }
  /// The response tokens the step generated so far.
  int64_t generated_tokens() const { return generated_tokens_; }
  const OrchestratorCounts& counts() const { return counts_; }
  /// The schedule's decisions so far, every step (models/flexmarl/schedule.h).
  const std::vector<Decision>& decisions() const { return decisions_; }

  /// No job posted and not completed, on any rank.
  bool quiescent() const;
  /// What the next step starts from; Internal when a job is in flight or
  /// the step left state behind (a trainer with gradients, a queued request).
  StatusOr<OrchestratorCarry> carry() const;
  /// Instead of start(): the state `carry` (from carry() of a run of the
  /// same options) describes, before the next begin_step. InvalidArgument
  /// naming the field and value that do not fit these options.
  Status resume(const OrchestratorCarry& carry);

 private:
  explicit Orchestrator(const OrchestratorOptions& options) : o_(options) {}

  ExperienceTable& table(int agent);
  int new_sample(int64_t input, int trajectory, int turn);
  void make_ready(int sample);
  Status post(JobSink& sink, Job job);
  Status ensure_weights(JobSink& sink, int rank, int agent);
  Status dispatch_generate(JobSink& sink, int rank, int agent, std::vector<int> samples, int instance = -1);
  Status dispatch_train(JobSink& sink, int rank, int agent, const std::vector<SampleId>& ids);
  Status dispatch_step(JobSink& sink, const std::vector<int>& ranks, int agent);
  Status swap_in(JobSink& sink, int rank, int agent);
  Status swap_out(JobSink& sink, int rank, int agent);
  /// flexmarl variants: a trainer for agent `a`'s next micro-batch (an idle
  /// holder, else a freed trainer it is swapped into), -1 when none now.
  StatusOr<int> trainer_for(JobSink& sink, int a);
  Status train_sharded(JobSink& sink, const std::vector<int>& ranks, int agent);
  /// The ranks of [first, last] that serve `agent` (sync's engines, marti's trainers).
  static std::vector<int> share_of(int agent, int first, int last);
  std::vector<int> every_worker() const;  // ranks 1..workers
  std::vector<int> marti_trainers(int agent) const;
  void allocate_instances();
  Status schedule(JobSink& sink);
  /// sync, marti: each idle rank of `ranks` takes up to --rollout-batch of
  /// `agent`'s ready requests.
  Status roll_out_turn(JobSink& sink, const std::vector<int>& ranks, int agent);
  /// sync, marti: whether phase phase_ has started (it starts, and is
  /// logged, once every request of its agents is ready).
  bool start_phase();
  /// sync, marti: every agent of phase phase_ has answered its batch.
  bool phase_answered() const;
  Status schedule_sync(JobSink& sink);
  Status schedule_marti(JobSink& sink);
  Status schedule_flexmarl(JobSink& sink);
  void balance_queues();                         // flexmarl's balancing of the rollout queues
  Status dispatch_queues(JobSink& sink);         // the idle instances' rollouts
  Status dispatch_micro_batches(JobSink& sink);  // flexmarl's training as micro-batches complete
  Status on_generated(int sample);
  Status reward(int sample, double value);
  bool idle(int rank) const { return jobs_[static_cast<size_t>(rank)].empty(); }

  OrchestratorOptions o_;
  std::optional<Schedule> schedule_;  // set by create()
  std::vector<Decision> decisions_;
  ExperienceStore store_;
  OrchestratorCounts counts_;

  // Versions and where each agent's trainer state is.
  std::array<int64_t, kAgents> version_{};
  // The flexmarl variants' trainer state. The host keeps a copy of every
  // agent's state at its current version (the step's publish brings it
  // back); a swap-in copies it to a trainer, so an agent with several ready
  // micro-batches can be bound to several trainers (replicas, data
  // parallel: their gradients are all-reduced at the step). A trainer that
  // trained a micro-batch of the current version holds gradients the host
  // lacks: it steps with the agent's other replicas, or, as the agent's
  // only holder, is swapped out to the host with them to free it.
  std::array<std::vector<int>, kAgents> holders_;     // trainer ranks with the agent's current state
  std::array<std::vector<int>, kAgents> trained_on_;  // holders with gradients of the current version
  std::array<bool, kAgents> host_valid_{};            // the host copy is there (not on its way back)
  std::array<bool, kAgents> host_grad_{};             // the host copy carries gradients of the current version
  std::vector<std::map<int, int64_t>> cached_;        // per rank: agent -> weight version loaded there
  std::vector<std::deque<Job>> jobs_;                 // per rank: posted, not completed, in order

  // The step.
  int step_ = 0;
  std::vector<TaskSample> samples_;
  std::map<std::tuple<int64_t, int, int>, int> sample_of_;  // (input, trajectory, turn) -> sample
  std::array<std::deque<int>, kAgents> pending_;            // sync, marti: requests ready to roll out
  std::array<int, kAgents> generated_{}, sent_{}, trained_{};
  std::array<bool, kAgents> step_sent_{}, published_{};
  int64_t generated_tokens_ = 0;
  int phase_ = 0;
  bool phase_started_ = false;
  bool training_started_ = false;

  // The flexmarl variants' rollout instances.
  std::optional<LoadBalancer> balancer_;
  std::vector<int> instance_rank_;
  std::vector<std::deque<int>> queue_;             // per instance
  std::array<std::deque<int>, kAgents> unplaced_;  // flexmarl: requests of an agent that has lent every instance
};

}  // namespace clustertwin::models::flexmarl
