#pragma once

// The controller of `run flexmarl` (rank 0): the experience store, the load
// balancer, the published weights and the host copies of swapped-out
// trainer state; it decides what every worker does next, framework by
// framework (real/flexmarl/flexmarl_command.h draws the five).

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "models/flexmarl/experience_store.h"
#include "models/flexmarl/frameworks.h"
#include "models/flexmarl/load_balancer.h"
#include "models/flexmarl/math_task.h"
#include "real/core/communicator.h"
#include "real/core/tracer.h"
#include "real/flexmarl/messages.h"
#include "real/flexmarl/worker.h"

namespace clustertwin::real::flexmarl {

using clustertwin::flexmarl::Framework;

/// Whether the real executor runs `framework` with rollout workers apart from
/// trainer workers that swap agents' state (flexmarl and its ablations). sync
/// and marti keep each trainer's state resident where it trains and roll out
/// on every worker (the twin models marti's pools apart, on a cluster).
bool separates_trainers(Framework framework);

struct ControllerOptions {
  Framework framework = Framework::kFlexMarl;
  int steps = 1;
  int queries = 4;
  int group = 4;
  int micro_batch = 4;
  int rollout_batch = 8;  // requests per rollout job at most
  int trainers = 1;       // flexmarl variants: trainer workers (the last ones)
  double load_gap = 2;
  bool token_normalised = false;  // dapo: the step divides by the batch's response tokens
  int topk = 4;
  uint64_t seed = 0;
  AdamOptions adam;
  sis::LossOptions loss;
};

struct StepReport {
  double seconds = 0;
  int64_t generated_tokens = 0;
  std::array<double, clustertwin::flexmarl::kTaskTurns> mean_reward{};
};

struct ControllerReport {
  std::vector<StepReport> steps;
  int workers = 0;
  double worker_cpu_s = 0;  // CPU seconds in jobs (without waiting for a core), summed over workers
  int64_t swaps = 0, reassignments = 0, migrations = 0, weight_loads = 0;
  std::vector<at::Tensor> weights;    // the final published weights, per agent
  std::vector<at::Tensor> gradients;  // the gradient of each agent's last step
};

class Controller {
 public:
  Controller(Communicator& comm, Group& world, Tracer& tracer, ControllerOptions options);

  /// Runs every step and stops the workers. Internal when the experience
  /// store catches a version violation (the workers are stopped first).
  StatusOr<ControllerReport> run();

 private:
  struct Sample {
    clustertwin::flexmarl::SampleId id;
    int agent = 0;
    uint64_t key = 0;
    std::vector<int64_t> prompt;
    int budget = 1;
    std::vector<int64_t> response;
    at::Tensor logp, topk_ids, topk_logp;
    int64_t version = -1;
    double reward = 0;
    bool rewarded = false;
    double advantage = 0;
  };
  struct Job {
    Kind kind = Kind::kDone;
    int agent = 0;
    std::vector<int> samples;
    int instance = -1;
  };

  Status run_step(int step);
  void allocate_instances();
  Status schedule();
  Status schedule_sync();
  Status schedule_marti();
  Status schedule_flexmarl();
  Status handle(int rank, Message& m);
  Status on_generated(int sample);
  Status reward(int sample, double value);
  Status stop_workers(bool abort, ControllerReport* report);

  int new_sample(int64_t input, int trajectory, int turn);
  void make_ready(int sample);
  Status post(int rank, Job job, Message m);
  Status ensure_weights(int rank, int agent);
  Status dispatch_generate(int rank, int agent, std::vector<int> samples, int instance = -1);
  Status dispatch_train(int rank, int agent, const std::vector<clustertwin::flexmarl::SampleId>& ids);
  Status dispatch_step(const std::vector<int>& ranks, int agent);
  Status swap_in(int rank, int agent);
  Status swap_out(int rank, int agent);
  /// Shards `ids` over `ranks` and sends each shard in micro-batches.
  Status train_sharded(const std::vector<int>& ranks, int agent);
  std::vector<int> marti_trainers(int agent) const;
  bool idle(int rank) const { return jobs_[static_cast<size_t>(rank)].empty(); }
  clustertwin::flexmarl::ExperienceTable& table(int agent);

  Communicator& comm_;
  Group& world_;
  Tracer& tracer_;
  ControllerOptions o_;
  Outbox outbox_;
  int workers_ = 0;
  static constexpr int kAgents = clustertwin::flexmarl::kTaskTurns;

  // Weights, versions, trainer state.
  std::vector<at::Tensor> weights_, gradients_, host_state_;
  std::vector<int64_t> version_;
  std::vector<int> holder_;  // flexmarl variants: the trainer rank holding the agent's state, -1 on the host
  std::vector<std::map<int, int64_t>> cached_;  // per rank: agent -> weight version loaded there
  std::vector<std::deque<Job>> jobs_;           // per rank: sent, not answered, in order

  // The step.
  clustertwin::flexmarl::ExperienceStore store_;
  int step_ = 0;
  std::vector<Sample> samples_;
  std::map<std::tuple<int64_t, int, int>, int> sample_of_;  // (input, trajectory, turn) -> sample
  std::array<std::deque<int>, kAgents> pending_;            // sync, marti: requests ready to roll out
  std::array<int, kAgents> generated_{}, sent_{}, trained_{};
  std::array<bool, kAgents> step_sent_{}, published_{};
  int phase_ = 0;
  bool phase_started_ = false;
  bool training_started_ = false;

  // The flexmarl variants' rollout instances.
  std::optional<clustertwin::flexmarl::LoadBalancer> balancer_;
  std::vector<int> instance_rank_;
  std::vector<std::deque<int>> queue_;  // per instance

  ControllerReport report_;
};

}  // namespace clustertwin::real::flexmarl
