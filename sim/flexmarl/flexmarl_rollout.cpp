// The FlexMARL twin's rollout: instances decode in chunks (continuous batching), turns
// and phases issue requests, the load balancer moves requests and instances.

#include <algorithm>
#include <numeric>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "models/flexmarl/workload.h"
#include "sim/flexmarl/flexmarl_model.h"

namespace clustertwin::sim::flexmarl::detail {

void FlexMarlRun::start_rollout() {
  if (framework_ == Framework::kSync || framework_ == Framework::kMarti) {
    issue_phase(0);
    return;
  }
  // FlexMARL: the first turn of as many queries as may be in flight; later turns follow each sample.
  admitted_ = 0;
  for (int q = 0; q < schedule_->queries_in_flight(w_.inter_query); ++q)
    admit();
}

std::vector<int> FlexMarlRun::rollout_agents() const {
  if (schedule_->phases().empty()) return schedule_->agents_of_turn(0);
  return schedule_->phases()[static_cast<size_t>(phase_)];
}

void FlexMarlRun::admit() {
  const int q = admitted_++;
  for (int a : rollout_agents()) {
    for (int s = q * w_.group; s < (q + 1) * w_.group; ++s)
      issue(a, s);
  }
}

bool FlexMarlRun::answered(int query, const std::vector<int>& agents) const {
  for (int a : agents) {
    for (int s = query * w_.group; s < (query + 1) * w_.group; ++s) {
      if (!done_[a][s]) return false;
    }
  }
  return true;
}

void FlexMarlRun::issue_phase(int phase) {
  phase_ = phase;
  admitted_ = 0;
  const std::vector<int>& agents = schedule_->phases()[static_cast<size_t>(phase)];
  decisions_.push_back({models::flexmarl::Decision::Kind::kPhase, agents.front(), phase});
  auto issue_all = [this] {
    for (int q = 0; q < schedule_->queries_in_flight(w_.inter_query); ++q)
      admit();
  };
  if (framework_ != Framework::kSync) {
    issue_all();
    return;
  }
  // Sync's engines share the devices: the phase's agent's weights come in from host memory first (each
  // device its shard), over the weights of the agent before it.
  std::vector<Flow> flows;
  for (const Instance& inst : instances_) {
    if (std::find(agents.begin(), agents.end(), inst.agent) == agents.end()) continue;
    for (int t = 0; t < inst.tp; ++t) {
      const int dev = inst.first_device + t;
      flows.push_back({platform_.cpu(dev), platform_.device(dev),
                       models::flexmarl::weight_bytes(w_.agents[inst.agent].model) / inst.tp});
    }
  }
  transfer(flows, 0, d_.devices, agents.front(), "reload", issue_all);
}

void FlexMarlRun::issue(int agent, int sample) {
  issued_[agent][sample] = true;
  Request r;
  r.agent = agent;
  r.sample = sample;
  r.prompt = w_.agents[agent].prompt_tokens;
  r.remaining = lengths_[agent][sample];
  r.context = r.prompt;
  requests_.push_back(r);
  const int id = static_cast<int>(requests_.size()) - 1;
  int target;
  if (balanced()) {
    target = balancer_->dispatch(agent);
  } else {
    // Round robin over the agent's instances (their order never changes without the balancer).
    std::vector<int> mine;
    for (size_t i = 0; i < instances_.size(); ++i) {
      if (instances_[i].agent == agent) mine.push_back(static_cast<int>(i));
    }
    target = mine[static_cast<size_t>(rr_[agent]++ % static_cast<int>(mine.size()))];
  }
  instances_[target].queue.push_back(id);
  wake(target);
}

// Starts a chunk on an idle instance, or cuts the running one when a queued request could join it.
void FlexMarlRun::wake(int i) {
  Instance& inst = instances_[i];
  if (inst.loading) return;
  if (inst.exec) {
    if (inst.queue.empty() || static_cast<int>(inst.active.size()) >= inst.slots) return;
    cut(i);
  }
  start_chunk(i);
}

void FlexMarlRun::cut(int i) {
  Instance& inst = instances_[i];
  const double left = inst.exec->get_remaining();
  const double done = inst.chunk_work > 0 ? std::clamp(1.0 - left / inst.chunk_work, 0.0, 1.0) : 1.0;
  sg::ExecPtr exec = inst.exec;
  reactor_.remove(exec);
  exec->cancel();
  inst.exec = nullptr;
  advance(i, done * inst.chunk_seconds);
}

// Credits `elapsed` nominal seconds of the current chunk: prefill first, then decode iterations.
void FlexMarlRun::advance(int i, double elapsed) {
  Instance& inst = instances_[i];
  busy(inst.first_device, inst.tp, inst.chunk_start, sg::Engine::get_clock(), inst.agent, "decode", true);
  if (elapsed + 1e-12 >= inst.chunk_prefill) {
    for (int r : inst.chunk_prefilling)
      requests_[r].prefilled = true;
  }
  const double tokens = inst.chunk_iteration > 0
                            ? std::clamp((elapsed - inst.chunk_prefill) / inst.chunk_iteration, 0.0, inst.chunk_tokens)
                            : 0.0;
  for (int r : inst.active) {
    if (!requests_[r].prefilled) continue;
    requests_[r].remaining -= tokens;
    requests_[r].context += tokens;
  }
  inst.chunk_prefilling.clear();
}

void FlexMarlRun::start_chunk(int i) {
  Instance& inst = instances_[i];
  const spec::LlmSpec& model = w_.agents[inst.agent].model;
  while (!inst.queue.empty() && static_cast<int>(inst.active.size()) < inst.slots) {
    const int r = inst.queue.front();
    inst.queue.pop_front();
    inst.active.push_back(r);
    if (balanced()) balancer_->start(i);
  }
  if (inst.active.empty()) return;
  double prefill_tokens = 0, context = 0, shortest = 1e300;
  for (int r : inst.active) {
    const Request& q = requests_[r];
    if (!q.prefilled) {
      prefill_tokens += q.prompt;
      inst.chunk_prefilling.push_back(r);
    }
    context += q.context;
    shortest = std::min(shortest, q.remaining);
  }
  const double n = static_cast<double>(inst.active.size());
  inst.chunk_tokens = std::max(shortest, 0.0);
  inst.chunk_prefill =
      prefill_tokens > 0 ? models::flexmarl::prefill_s(model, inst.tp, device_, efficiency_, prefill_tokens) : 0;
  // Contexts grow by n tokens per iteration: the chunk's mean iteration reads the midpoint.
  inst.chunk_iteration =
      models::flexmarl::decode_iteration_s(model, inst.tp, device_, efficiency_, context + n * inst.chunk_tokens / 2);
  inst.chunk_seconds = inst.chunk_prefill + inst.chunk_tokens * inst.chunk_iteration;
  inst.chunk_start = sg::Engine::get_clock();
  inst.chunk_work = platform_.work_units(inst.first_device, inst.chunk_seconds);
  inst.exec = sg::this_actor::exec_init(inst.chunk_work)->set_host(platform_.device(inst.first_device));
  inst.exec->start();
  add(inst.exec, [this, i] { chunk_done(i); });
}

void FlexMarlRun::chunk_done(int i) {
  Instance& inst = instances_[i];
  inst.exec = nullptr;
  advance(i, inst.chunk_seconds);
  std::vector<int> finished;
  std::vector<int> still;
  for (int r : inst.active) {
    (requests_[r].remaining <= kDoneTokens ? finished : still).push_back(r);
  }
  inst.active = std::move(still);
  if (balanced()) {
    for (size_t k = 0; k < finished.size(); ++k)
      balancer_->finish(i);
  }
  start_chunk(i);
  for (int r : finished)
    finish_request(requests_[r].agent, requests_[r].sample);
  if (balanced()) rebalance();
}

// At a step's start the orchestrator gives every instance back to the agent the deployment planned for it
// (the balancer's moves answer one step's load; the next step starts with the first turn again).
void FlexMarlRun::replan() {
  for (size_t i = 0; i < instances_.size(); ++i) {
    if (instances_[i].agent != planned_agent_[i]) move_instance(static_cast<int>(i), planned_agent_[i]);
  }
}

// Gives idle instance `idx` to `agent`: it loads that agent's weights from host memory (each device its shard).
void FlexMarlRun::move_instance(int idx, int agent) {
  Instance& inst = instances_[idx];
  CT_CHECK(inst.active.empty() && inst.queue.empty() && !inst.exec);
  const bool idle = balancer_->assign(idx, agent);
  CT_CHECK(idle) << "instance " << idx << " moved with requests";
  inst.agent = agent;
  ++reassignments_;
  inst.loading = true;
  const int generation = ++inst.load_generation;
  std::vector<Flow> flows;
  for (int k = 0; k < inst.tp; ++k) {
    flows.push_back({platform_.cpu(inst.first_device + k), platform_.device(inst.first_device + k),
                     models::flexmarl::weight_bytes(w_.agents[agent].model) / inst.tp});
  }
  transfer(flows, inst.first_device, inst.tp, agent, "reload", [this, idx, generation] {
    if (instances_[idx].load_generation != generation) return;
    instances_[idx].loading = false;
    wake(idx);
  });
}

void FlexMarlRun::rebalance() {
  for (const models::flexmarl::Migration& m : balancer_->balance_within_agents()) {
    Instance& from = instances_[m.from_instance];
    Instance& to = instances_[m.to_instance];
    for (int k = 0; k < m.requests; ++k) {
      CT_CHECK(!from.queue.empty());
      to.queue.push_back(from.queue.back());
      from.queue.pop_back();
    }
    migrations_ += m.requests;
    wake(m.to_instance);
  }
  if (std::optional<models::flexmarl::Reassignment> move = balancer_->balance_across_agents()) {
    move_instance(move->instance, move->to);
  }
}

void FlexMarlRun::finish_request(int agent, int sample) {
  done_[agent][sample] = true;
  ++done_count_[agent];
  bool all_done = true;
  for (size_t a = 0; a < w_.agents.size(); ++a)
    all_done = all_done && done_count_[a] == w_.global_batch;
  if (all_done) rollout_end_ = sg::Engine::get_clock();
  const int query = sample / w_.group;
  if (framework_ == Framework::kSync || framework_ == Framework::kMarti) {
    const std::vector<std::vector<int>>& phases = schedule_->phases();
    if (admitted_ < schedule_->queries() && answered(query, phases[static_cast<size_t>(phase_)])) admit();
    bool phase_done = true;
    for (int a : phases[static_cast<size_t>(phase_)])
      phase_done = phase_done && done_count_[a] == w_.global_batch;
    if (!phase_done) return;
    if (phase_ + 1 < static_cast<int>(phases.size())) {
      issue_phase(phase_ + 1);
    } else if (framework_ == Framework::kSync) {
      sync_train(0);
    } else {
      for (size_t a = 0; a < w_.agents.size(); ++a) {
        while (const int size =
                   schedule_->next_micro_batch(w_.global_batch, queued_for_training_[a], /*rollout_done=*/true)) {
          queue_job(static_cast<int>(a), size);
        }
      }
      schedule_trainers();
    }
    return;
  }
  // FlexMARL: the sample's next turn, where every input of it is done.
  const int turn = w_.agents[agent].turn;
  for (int next : schedule_->agents_of_turn(turn + 1)) {
    if (!issued_[next][sample] && schedule_->sample_ready(next, sample, done_)) issue(next, sample);
  }
  std::vector<int> everyone(w_.agents.size());
  std::iota(everyone.begin(), everyone.end(), 0);
  if (admitted_ < schedule_->queries() && answered(query, everyone)) admit();
  // A sample is rewarded when its episode is over: the outcome reward is the episode's, shared by every agent that
  // answered in it (MARTI's chain workflows score the chain's final answer for every agent; the real executor's
  // planner takes the solver's reward, models/flexmarl/math_task.h). Until then no agent's row of it can train.
  bool episode_over = true;
  for (size_t a = 0; a < w_.agents.size() && episode_over; ++a)
    episode_over = done_[a][sample];
  if (!episode_over) return;
  rewarded_[sample] = true;
  // Micro-batches of rows from whole groups (advantages fixed once a group is rewarded), as the schedule cuts them.
  const int complete = schedule_->complete_rows(rewarded_);
  for (size_t a = 0; a < w_.agents.size(); ++a) {
    while (const int size = schedule_->next_micro_batch(complete, queued_for_training_[a], /*rollout_done=*/true)) {
      queue_job(static_cast<int>(a), size);
    }
  }
  schedule_trainers();
}

}  // namespace clustertwin::sim::flexmarl::detail
