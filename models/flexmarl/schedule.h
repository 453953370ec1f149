#pragma once

// One description of what each FlexMARL framework decides, driven by both of
// its executors: the cluster twin (sim/flexmarl/flexmarl_model.h, a paper
// workload on a cluster profile) and the orchestrator
// (models/flexmarl/orchestrator.h, which the real controller and the process
// twin run). The executors differ in what a job is (a SimGrid activity, a
// message to a worker process) and in how trainers are bound (trainer groups
// of a cluster, worker ranks); they take these decisions from here:
//
//   turns        sync: one agent at a time, by turn, then by index; marti:
//                one turn at a time; a phase starts when the one before it
//                has answered every request. flexmarl and its ablations:
//                no phases, a sample's next turn starts once every agent of
//                its turn has answered that sample
//   micro-batch  sync, marti: an agent trains its whole batch once the last
//                phase is done; flexmarl, flexmarl-nobalance: micro-batches
//                of rows whose groups are complete (advantages fixed), as
//                soon as there are enough, the remainder last;
//                flexmarl-noasync: the same micro-batches, only once the
//                agent's whole batch is complete
//   publish      the optimizer step and the weight publish follow once an
//                agent's whole batch has trained (on-policy)
//
// Each executor can keep a log of the decisions (Decision) so that a test
// can check that both took the same ones on one workload.

#include <string>
#include <vector>

#include "common/status.h"
#include "models/flexmarl/frameworks.h"

namespace clustertwin::models::flexmarl {

/// One decision of a schedule, as an executor took it.
struct Decision {
  enum class Kind { kPhase, kMicroBatch, kPublish };
  Kind kind = Kind::kPhase;
  int agent = 0;  // kPhase: the first agent of the phase
  int size = 0;   // kPhase: the phase's index; kMicroBatch: its samples; kPublish: the samples trained
  bool operator==(const Decision&) const = default;
};
/// "phase 1: agent 2", "micro-batch agent 0: 16 samples", "publish agent 1 (64 samples)".
std::string describe(const Decision& d);

class Schedule {
 public:
  /// `turns[a]`: the turn agent `a` answers in. InvalidArgument when the
  /// group does not divide the batch, the micro-batch is < 1, a turn is
  /// negative or no agent is given.
  static StatusOr<Schedule> create(Framework framework, std::vector<int> turns, int batch, int group, int micro_batch);

  Framework framework() const { return framework_; }
  int agents() const { return static_cast<int>(turns_.size()); }
  int batch() const { return batch_; }

  /// sync and marti: the agents that roll out together, phase after phase;
  /// empty for the flexmarl variants (they have no phases).
  const std::vector<std::vector<int>>& phases() const { return phases_; }
  /// Queries of a global batch (batch / group); sample s belongs to query s / group.
  int queries() const { return batch_ / group_; }
  /// Queries whose requests may be in flight at once, given the workload's
  /// inter-query parallelism: sync (MAS-RL) runs one query's episode at a
  /// time (parallel sampling across queries is FlexMARL's contribution,
  /// ../shared/papers/flexmarl.md; reconstruction), marti the whole batch
  /// (OpenRLHF's engines take every prompt), flexmarl and its ablations
  /// `inter_query`. A query's next one is admitted once every agent of the
  /// phase (sync, marti) or of the workload (flexmarl) has answered it.
  int queries_in_flight(int inter_query) const;
  /// The agents answering in `turn`, by index.
  std::vector<int> agents_of_turn(int turn) const;
  int last_turn() const;
  /// flexmarl variants: whether sample `sample` of agent `agent` may start,
  /// given done[a][s] (agent a has answered sample s): every agent of the
  /// turn before `agent`'s has answered it.
  bool sample_ready(int agent, int sample, const std::vector<std::vector<bool>>& done) const;

  /// The samples of the next micro-batch of an agent with `complete` rows
  /// ready to train (rows whose groups are whole: complete_rows) and
  /// `taken` already cut into micro-batches; 0 when none is due now.
  /// `rollout_done`: sync and marti cut nothing before their rollout ends.
  int next_micro_batch(int complete, int taken, bool rollout_done) const;
  /// Rows ready to train out of done[s] (sample s answered): whole groups only.
  int complete_rows(const std::vector<bool>& done) const;
  /// Whether an agent with `trained` samples trained steps and publishes now.
  bool publishes(int trained) const { return trained == batch_; }

 private:
  Schedule() = default;

  Framework framework_ = Framework::kSync;
  std::vector<int> turns_;
  int batch_ = 0, group_ = 0, micro_batch_ = 0;
  std::vector<std::vector<int>> phases_;
};

}  // namespace clustertwin::models::flexmarl
