// The orchestrator's framework schedules: what each framework posts next
// once a job completes (sync, marti, and flexmarl with its ablations), the
// flexmarl variants' trainer binding and their allocation of rollout
// instances at a step's start. The bookkeeping they call (dispatching jobs,
// swaps, the store) is in orchestrator_jobs.cpp and orchestrator_samples.cpp.

#include <algorithm>
#include <array>
#include <optional>

#include "models/flexmarl/math_task.h"
#include "models/flexmarl/orchestrator.h"

namespace clustertwin::models::flexmarl {

StatusOr<int> Orchestrator::trainer_for(JobSink& sink, int a) {
  const size_t ai = static_cast<size_t>(a);
  for (int r : holders_[ai]) {
    if (idle(r)) return r;
  }
  // A new holder needs the host copy, and a second one a copy without gradients.
  if (!host_valid_[ai] || (host_grad_[ai] && !holders_[ai].empty())) return -1;
  // A replica only from the trainers no other agent will need: one stays free for each agent that still has
  // samples to train and holds no trainer, so the agent whose rows complete first cannot take every trainer
  // and leave the others' micro-batches waiting for its step.
  const int batch = o_.queries * o_.group;
  int reserved = 0;
  for (int b = 0; b < kAgents; ++b) {
    reserved += b != a && holders_[static_cast<size_t>(b)].empty() && sent_[static_cast<size_t>(b)] < batch;
  }
  if (static_cast<int>(holders_[ai].size()) >= std::max(1, o_.trainers - reserved)) return -1;
  auto held_by = [&](int r) {
    std::vector<int> agents;
    for (int b = 0; b < kAgents; ++b) {
      const auto& h = holders_[static_cast<size_t>(b)];
      if (std::find(h.begin(), h.end(), r) != h.end()) agents.push_back(b);
    }
    return agents;
  };
  auto has_gradients = [&](int r, int b) {
    const auto& t = trained_on_[static_cast<size_t>(b)];
    return std::find(t.begin(), t.end(), r) != t.end();
  };
  // Preference: a trainer holding nothing; one whose agents it can drop (the
  // host has the same state); one whose only agent it can swap out (its
  // only holder, its batch not yet wholly sent: never one waiting to step).
  int chosen = -1, how = 3;
  for (int r = o_.workers - o_.trainers + 1; r <= o_.workers; ++r) {
    if (!idle(r)) continue;
    const std::vector<int> held = held_by(r);
    int kind = 0;
    for (int b : held) {
      if (b == a) return Status::internal("flexmarl: an idle holder was passed over");
      if (!has_gradients(r, b)) {
        kind = std::max(kind, 1);
      } else if (holders_[static_cast<size_t>(b)].size() == 1 && sent_[static_cast<size_t>(b)] < batch) {
        kind = 2;
      } else {
        kind = 3;
      }
    }
    if (kind < how) chosen = r, how = kind;
  }
  if (chosen < 0 || how == 3) return -1;
  for (int b : held_by(chosen)) {
    auto& h = holders_[static_cast<size_t>(b)];
    if (has_gradients(chosen, b)) {
      CT_RETURN_IF_ERROR(swap_out(sink, chosen, b));
    } else {
      h.erase(std::find(h.begin(), h.end(), chosen));  // dropped: the host has it
    }
  }
  CT_RETURN_IF_ERROR(swap_in(sink, chosen, a));
  return chosen;
}

Status Orchestrator::roll_out_turn(JobSink& sink, const std::vector<int>& ranks, int agent) {
  std::deque<int>& ready = pending_[static_cast<size_t>(agent)];
  for (int r : ranks) {
    if (ready.empty()) break;
    if (!idle(r)) continue;
    std::vector<int> take;
    while (!ready.empty() && take.size() < static_cast<size_t>(o_.rollout_batch)) {
      take.push_back(ready.front());
      ready.pop_front();
    }
    CT_RETURN_IF_ERROR(dispatch_generate(sink, r, agent, std::move(take)));
  }
  return Status::ok();
}

bool Orchestrator::start_phase() {
  const std::vector<int>& agents = schedule_->phases()[static_cast<size_t>(phase_)];
  if (!phase_started_) {
    // A phase starts once every request of its agents is ready (the phase before it is done).
    for (int a : agents) {
      if (static_cast<int>(pending_[static_cast<size_t>(a)].size()) != schedule_->batch()) return false;
    }
    phase_started_ = true;
    decisions_.push_back({Decision::Kind::kPhase, agents.front(), phase_});
    // In id order, not in the order the turn before answered: a rollout job's batch (whose logits' last bits
    // depend on the rows batched with it) is then the same every run, and a run repeats bit for bit.
    for (int a : agents) {
      std::deque<int>& ready = pending_[static_cast<size_t>(a)];
      std::sort(ready.begin(), ready.end(), [&](int x, int y) {
        return samples_[static_cast<size_t>(x)].id < samples_[static_cast<size_t>(y)].id;
      });
    }
  }
  return true;
}

bool Orchestrator::phase_answered() const {
  for (int a : schedule_->phases()[static_cast<size_t>(phase_)]) {
    if (generated_[static_cast<size_t>(a)] != schedule_->batch()) return false;
  }
  return true;
}

Status Orchestrator::schedule_sync(JobSink& sink) {
  const int phases = static_cast<int>(schedule_->phases().size());
  for (;;) {
    if (phase_ < phases) {  // rollout phase phase_, on every worker
      if (phase_answered()) {
        ++phase_;
        phase_started_ = false;
        continue;
      }
      // Idle engine workers take up to --rollout-batch requests each.
      if (!start_phase()) return Status::ok();
      // Colocated: the phase's agent has its engine on every worker (each loads the weights once per step).
      return roll_out_turn(sink, every_worker(), schedule_->phases()[static_cast<size_t>(phase_)].front());
    }
    if (phase_ < phases + kAgents) {  // training of agent phase_ - phases, on every worker
      const int agent = phase_ - phases;
      if (published_[static_cast<size_t>(agent)]) {
        ++phase_;
        phase_started_ = false;
        continue;
      }
      if (!phase_started_) {
        CT_RETURN_IF_ERROR(train_sharded(sink, every_worker(), agent));
        phase_started_ = true;
      }
      return Status::ok();
    }
    return Status::ok();
  }
}

Status Orchestrator::schedule_marti(JobSink& sink) {
  const int phases = static_cast<int>(schedule_->phases().size());
  // Centralised rollout on the rollout pool (the workers before the
  // trainers), phase by phase (a turn's agents together; this task has one
  // agent per turn), any idle pool worker taking up to --rollout-batch
  // requests.
  while (phase_ < phases && phase_answered()) {
    ++phase_;
    phase_started_ = false;
  }
  if (phase_ < phases) {
    if (!start_phase()) return Status::ok();
    std::vector<int> pool;
    for (int r = 1; r <= o_.workers - o_.trainers; ++r)
      pool.push_back(r);
    for (int a : schedule_->phases()[static_cast<size_t>(phase_)])
      CT_RETURN_IF_ERROR(roll_out_turn(sink, pool, a));
    return Status::ok();
  }
  if (!training_started_) {  // after the last turn the agents train side by side on the training pool
    training_started_ = true;
    for (int a = 0; a < kAgents; ++a)
      CT_RETURN_IF_ERROR(train_sharded(sink, marti_trainers(a), a));
  }
  return Status::ok();
}

Status Orchestrator::schedule_flexmarl(JobSink& sink) {
  // Rollout: hierarchical balancing, then every idle instance takes its queue.
  if (o_.framework != Framework::kNoBalance) balance_queues();
  CT_RETURN_IF_ERROR(dispatch_queues(sink));
  return dispatch_micro_batches(sink);
}

// Requests migrate between an agent's instances, and an instance moves to the agent that needs it most.
void Orchestrator::balance_queues() {
  for (const Migration& mv : balancer_->balance_within_agents()) {
    std::deque<int>& from = queue_[static_cast<size_t>(mv.from_instance)];
    std::deque<int>& to = queue_[static_cast<size_t>(mv.to_instance)];
    for (int k = 0; k < mv.requests && !from.empty(); ++k) {
      to.push_back(from.back());
      from.pop_back();
    }
    ++counts_.migrations;
  }
  if (std::optional<Reassignment> move = balancer_->balance_across_agents()) {
    ++counts_.reassignments;
    std::deque<int>& waiting = unplaced_[static_cast<size_t>(move->to)];
    while (!waiting.empty()) {
      queue_[static_cast<size_t>(balancer_->place_unplaced(move->to))].push_back(waiting.front());
      waiting.pop_front();
    }
  }
}

// Every idle instance takes up to a rollout batch of its queue.
Status Orchestrator::dispatch_queues(JobSink& sink) {
  for (size_t i = 0; i < queue_.size(); ++i) {
    const int rank = instance_rank_[i];
    if (queue_[i].empty() || !idle(rank)) continue;
    const int agent = balancer_->instances()[i].agent;
    std::vector<int> take;
    while (!queue_[i].empty() && take.size() < static_cast<size_t>(o_.rollout_batch)) {
      take.push_back(queue_[i].front());
      queue_[i].pop_front();
      balancer_->start(static_cast<int>(i));
    }
    CT_RETURN_IF_ERROR(dispatch_generate(sink, rank, agent, std::move(take), static_cast<int>(i)));
  }
  return Status::ok();
}

Status Orchestrator::dispatch_micro_batches(JobSink& sink) {
  const int batch = o_.queries * o_.group;
  // Training: a micro-batch goes out as soon as its rows are complete (their
  // groups rewarded, advantages fixed), to an idle trainer of the agent.
  for (int a = 0; a < kAgents; ++a) {
    const size_t ai = static_cast<size_t>(a);
    const int64_t version = version_[ai];
    for (;;) {
      const ExperienceTable::Counts c = table(a).counts(version);
      const int untaken = static_cast<int>(c.complete - c.taken);
      // The schedule cuts the micro-batch (models/flexmarl/schedule.h); a trainer must be free to take it.
      const int size = schedule_->next_micro_batch(sent_[ai] + untaken, sent_[ai], /*rollout_done=*/true);
      if (size == 0) break;
      auto rank = trainer_for(sink, a);
      if (!rank.is_ok()) return rank.status();
      if (*rank < 0) break;
      const std::vector<SampleId> ids = table(a).take(version, static_cast<size_t>(size), true);
      decisions_.push_back({Decision::Kind::kMicroBatch, a, size});
      CT_RETURN_IF_ERROR(dispatch_train(sink, *rank, a, ids));
      auto& t = trained_on_[ai];
      if (std::find(t.begin(), t.end(), *rank) == t.end()) t.push_back(*rank);
    }
    if (sent_[ai] == batch && trained_[ai] == batch && !step_sent_[ai] && !trained_on_[ai].empty()) {
      // The holders that trained step together; the others hold the old state and are dropped.
      std::vector<int> members = trained_on_[ai];
      std::sort(members.begin(), members.end());
      holders_[ai] = members;
      CT_RETURN_IF_ERROR(dispatch_step(sink, members, a));
    }
  }
  return Status::ok();
}

Status Orchestrator::schedule(JobSink& sink) {
  switch (o_.framework) {
    case Framework::kSync:
      return schedule_sync(sink);
    case Framework::kMarti:
      return schedule_marti(sink);
    default:
      return schedule_flexmarl(sink);
  }
}

void Orchestrator::allocate_instances() {
  // Agent-centric allocation at the step's start: rollout instances in
  // proportion to each agent's decode work this step (the sum of its length
  // budgets, known up front), at least one each, by largest remainder; the
  // balancer moves them during the step.
  std::array<double, kAgents> work{};
  for (int64_t q = 0; q < o_.queries; ++q) {
    for (int j = 0; j < o_.group; ++j) {
      for (int t = 0; t < kAgents; ++t) {
        work[static_cast<size_t>(t)] +=
            task_budget(o_.task, o_.seed, t, static_cast<int64_t>(step_) * o_.queries + q, j);
      }
    }
  }
  const int instances = static_cast<int>(queue_.size());
  double total = 0;
  for (double w : work)
    total += w;
  std::array<int, kAgents> target{};
  std::array<double, kAgents> remainder{};
  int given = 0;
  for (int a = 0; a < kAgents; ++a) {
    const double share = (instances - kAgents) * work[static_cast<size_t>(a)] / total;
    target[static_cast<size_t>(a)] = 1 + static_cast<int>(share);
    remainder[static_cast<size_t>(a)] = share - static_cast<int>(share);
    given += target[static_cast<size_t>(a)];
  }
  while (given < instances) {
    int best = 0;
    for (int a = 1; a < kAgents; ++a) {
      if (remainder[static_cast<size_t>(a)] > remainder[static_cast<size_t>(best)]) best = a;
    }
    ++target[static_cast<size_t>(best)];
    remainder[static_cast<size_t>(best)] = -1;
    ++given;
  }
  // Move instances from agents above their target to agents below it.
  for (int i = 0; i < instances; ++i) {
    const int from = balancer_->instances()[static_cast<size_t>(i)].agent;
    if (balancer_->instance_count(from) <= target[static_cast<size_t>(from)]) continue;
    for (int to = 0; to < kAgents; ++to) {
      if (balancer_->instance_count(to) < target[static_cast<size_t>(to)] && balancer_->assign(i, to)) break;
    }
  }
}

}  // namespace clustertwin::models::flexmarl
