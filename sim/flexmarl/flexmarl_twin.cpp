#include "sim/flexmarl/flexmarl_twin.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "common/text.h"
#include "common/version.h"
#include "models/flexmarl/load_balancer.h"
#include "sim/core/isolated.h"
#include "sim/core/platform.h"
#include "traces/trace_writer.h"

namespace sg = simgrid::s4u;

namespace clustertwin::sim {
namespace {

using flexmarl::Framework;

constexpr double kDoneTokens = 1e-6;  // a request with fewer tokens left is finished

struct Request {
  int agent = 0, sample = 0;
  int prompt = 0;
  double remaining = 0;  // response tokens still to generate
  double context = 0;    // prompt plus tokens generated so far
  bool prefilled = false;
};

struct Instance {
  int agent = 0;
  int first_device = 0;
  int tp = 1;
  int slots = 1;
  std::deque<int> queue;    // request ids waiting for a slot
  std::vector<int> active;  // request ids being decoded
  bool loading = false;     // loading another agent's weights
  int load_generation = 0;  // which load the instance waits for (a second move supersedes the first)
  // The chunk running now (exec is null when idle).
  sg::ExecPtr exec;
  double chunk_start = 0, chunk_prefill = 0, chunk_iteration = 0, chunk_tokens = 0, chunk_seconds = 0;
  double chunk_work = 0;
  std::vector<int> chunk_prefilling;  // requests whose prefill the chunk holds
};

struct Job {
  int agent = 0;
  std::vector<int> samples;
  bool last = false;  // the agent's last samples of the step: the optimizer step and publish follow
};

// One host-to-host transfer of a transfer set.
struct Flow {
  sg::Host* from;
  sg::Host* to;
  double bytes;
};

struct TrainerGroup {
  int first_device = 0, devices = 0;
  int resident = -1;  // the agent whose state is on the devices
  bool busy = false;
};

class Run {
 public:
  Run(const FlexMarlSetup& setup, const ClusterProfile& profile, Platform& platform, Framework framework,
      flexmarl::Deployment deployment)
      : setup_(setup),
        w_(setup.workload),
        profile_(profile),
        platform_(platform),
        framework_(framework),
        d_(std::move(deployment)),
        device_(device_facts(profile)) {}

  Status run() {
    const int agents = static_cast<int>(w_.agents.size());
    // Devices: the rollout pool first, instance after instance, agent after agent; then the trainer groups.
    int next_device = 0;
    std::vector<int> per_agent;
    for (int a = 0; a < agents; ++a) {
      if (framework_ == Framework::kSync) next_device = 0;  // every agent's engine spans all devices
      for (int i = 0; i < d_.instances[a]; ++i) {
        Instance inst;
        inst.agent = a;
        inst.first_device = next_device;
        inst.tp = d_.tp[a];
        inst.slots = d_.slots[a];
        next_device += inst.tp;
        instances_.push_back(std::move(inst));
      }
      per_agent.push_back(d_.instances[a]);
      planned_agent_.insert(planned_agent_.end(), d_.instances[a], a);
    }
    for (int g = 0; g < d_.trainer_groups; ++g) {
      groups_.push_back({d_.rollout_devices + g * d_.trainer_group_devices, d_.trainer_group_devices, -1, false});
    }
    // The balancer only moves instances between agents of one instance size.
    std::vector<int> sizes(d_.tp.begin(), d_.tp.end());
    auto balancer = flexmarl::LoadBalancer::create(per_agent, setup_.gap_threshold, sizes);
    if (!balancer.is_ok()) return balancer.status();
    balancer_.emplace(std::move(*balancer));
    rr_.assign(agents, 0);
    phases_ = phases();

    for (int step = 0; step < setup_.steps; ++step) {
      CT_RETURN_IF_ERROR(run_step(step));
    }
    return Status::ok();
  }

  FlexMarlRow result() const {
    FlexMarlRow row;
    row.framework = std::string(flexmarl::framework_name(framework_));
    row.workload = w_.name;
    row.agents = static_cast<int>(w_.agents.size());
    row.devices = d_.devices;
    row.step_times_s = step_times_;
    const int measured = static_cast<int>(step_times_.size()) - 1;
    double step = 0, rollout = 0, busy = 0;
    for (int s = 1; s <= measured; ++s) {
      step += step_times_[s];
      rollout += rollout_times_[s];
      busy += busy_device_s_[s];
    }
    row.step_s = step / measured;
    row.rollout_s = rollout / measured;
    double tokens = 0;
    for (int s = 1; s <= measured; ++s)
      tokens += static_cast<double>(tokens_[s]);
    row.tokens_per_s = tokens / step;
    row.utilization = busy / (static_cast<double>(d_.devices) * step);
    row.reassignments = reassignments_ / static_cast<int64_t>(step_times_.size());
    row.migrations = migrations_ / static_cast<int64_t>(step_times_.size());
    const double last_start = step_starts_.back();
    for (const BusyInterval& b : intervals_) {
      if (b.end_s <= last_start) continue;
      BusyInterval c = b;
      c.start_s = std::max(0.0, b.start_s - last_start);
      c.end_s = b.end_s - last_start;
      row.last_step.push_back(c);
    }
    return row;
  }

 private:
  // ---- the event loop --------------------------------------------------------------------------------------
  void add(sg::ActivityPtr activity, std::function<void()> on_done) {
    pending_.push_back(std::move(activity));
    handlers_.push_back(std::move(on_done));
  }

  void remove(const sg::ActivityPtr& activity) {
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i] == activity) {
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        handlers_.erase(handlers_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }

  Status run_step(int step) {
    step_ = step;
    const double start = sg::Engine::get_clock();
    step_starts_.push_back(start);
    busy_device_s_.push_back(0);
    lengths_ = flexmarl::response_lengths(w_, setup_.seed, step);
    int64_t tokens = 0;
    for (const auto& agent : lengths_)
      tokens += std::accumulate(agent.begin(), agent.end(), int64_t{0});
    tokens_.push_back(tokens);
    const int agents = static_cast<int>(w_.agents.size());
    done_.assign(agents, std::vector<bool>(w_.global_batch, false));
    issued_.assign(agents, std::vector<bool>(w_.global_batch, false));
    done_count_.assign(agents, 0);
    queued_for_training_.assign(agents, 0);
    trained_.assign(agents, 0);
    published_ = 0;
    rollout_end_ = start;
    step_done_ = false;
    phase_ = 0;

    if (balanced()) replan();
    start_rollout();
    while (!step_done_) {
      if (pending_.empty()) {
        return Status::internal("flexmarl twin: " + std::string(flexmarl::framework_name(framework_)) +
                                " stalled in step " + std::to_string(step) + " (nothing left to wait for)");
      }
      const ssize_t i = sg::Activity::wait_any(pending_);
      CT_CHECK(i >= 0 && static_cast<size_t>(i) < pending_.size());
      std::function<void()> handler = std::move(handlers_[static_cast<size_t>(i)]);
      pending_.erase(pending_.begin() + i);
      handlers_.erase(handlers_.begin() + i);
      handler();
    }
    const double end = sg::Engine::get_clock();
    step_times_.push_back(end - start);
    rollout_times_.push_back(rollout_end_ - start);
    return Status::ok();
  }

  void busy(int first_device, int devices, double start, double end, int agent, const char* kind, bool work) {
    if (end <= start) return;
    intervals_.push_back({first_device, devices, start, end, agent, kind});
    if (work) busy_device_s_.back() += devices * (end - start);
  }

  // ---- rollout ---------------------------------------------------------------------------------------------
  std::vector<int> agents_of_turn(int turn) const {
    std::vector<int> out;
    for (size_t a = 0; a < w_.agents.size(); ++a) {
      if (w_.agents[a].turn == turn) out.push_back(static_cast<int>(a));
    }
    return out;
  }

  int last_turn() const {
    int t = 0;
    for (const auto& r : w_.agents)
      t = std::max(t, r.turn);
    return t;
  }

  // Sync's phases: one agent at a time, by turn then index. Marti's: one turn at a time.
  std::vector<std::vector<int>> phases() const {
    std::vector<std::vector<int>> out;
    for (int t = 0; t <= last_turn(); ++t) {
      std::vector<int> turn = agents_of_turn(t);
      if (turn.empty()) continue;
      if (framework_ == Framework::kSync) {
        for (int a : turn)
          out.push_back({a});
      } else {
        out.push_back(turn);
      }
    }
    return out;
  }

  void start_rollout() {
    if (framework_ == Framework::kSync || framework_ == Framework::kMarti) {
      issue_phase(0);
      return;
    }
    // FlexMARL: every sample whose inputs are ready (the first turn's, at the start).
    for (int a : agents_of_turn(0)) {
      for (int s = 0; s < w_.global_batch; ++s)
        issue(a, s);
    }
  }

  void issue_phase(int phase) {
    phase_ = phase;
    const std::vector<int>& agents = phases_[static_cast<size_t>(phase)];
    auto issue_all = [this, agents] {
      for (int a : agents) {
        for (int s = 0; s < w_.global_batch; ++s)
          issue(a, s);
      }
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
        flows.push_back(
            {platform_.cpu(dev), platform_.device(dev), flexmarl::weight_bytes(w_.agents[inst.agent].model) / inst.tp});
      }
    }
    transfer(flows, 0, d_.devices, agents.front(), "reload", issue_all);
  }

  bool balanced() const { return framework_ == Framework::kFlexMarl || framework_ == Framework::kNoAsync; }

  void issue(int agent, int sample) {
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
  void wake(int i) {
    Instance& inst = instances_[i];
    if (inst.loading) return;
    if (inst.exec) {
      if (inst.queue.empty() || static_cast<int>(inst.active.size()) >= inst.slots) return;
      cut(i);
    }
    start_chunk(i);
  }

  void cut(int i) {
    Instance& inst = instances_[i];
    const double left = inst.exec->get_remaining();
    const double done = inst.chunk_work > 0 ? std::clamp(1.0 - left / inst.chunk_work, 0.0, 1.0) : 1.0;
    sg::ExecPtr exec = inst.exec;
    remove(exec);
    exec->cancel();
    inst.exec = nullptr;
    advance(i, done * inst.chunk_seconds);
  }

  // Credits `elapsed` nominal seconds of the current chunk: prefill first, then decode iterations.
  void advance(int i, double elapsed) {
    Instance& inst = instances_[i];
    busy(inst.first_device, inst.tp, inst.chunk_start, sg::Engine::get_clock(), inst.agent, "decode", true);
    if (elapsed + 1e-12 >= inst.chunk_prefill) {
      for (int r : inst.chunk_prefilling)
        requests_[r].prefilled = true;
    }
    const double tokens = inst.chunk_iteration > 0 ? std::clamp((elapsed - inst.chunk_prefill) / inst.chunk_iteration,
                                                                0.0, inst.chunk_tokens)
                                                   : 0.0;
    for (int r : inst.active) {
      if (!requests_[r].prefilled) continue;
      requests_[r].remaining -= tokens;
      requests_[r].context += tokens;
    }
    inst.chunk_prefilling.clear();
  }

  void start_chunk(int i) {
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
        prefill_tokens > 0 ? flexmarl::prefill_s(model, inst.tp, device_, setup_.efficiency, prefill_tokens) : 0;
    // Contexts grow by n tokens per iteration: the chunk's mean iteration reads the midpoint.
    inst.chunk_iteration =
        flexmarl::decode_iteration_s(model, inst.tp, device_, setup_.efficiency, context + n * inst.chunk_tokens / 2);
    inst.chunk_seconds = inst.chunk_prefill + inst.chunk_tokens * inst.chunk_iteration;
    inst.chunk_start = sg::Engine::get_clock();
    inst.chunk_work = platform_.work_units(inst.first_device, inst.chunk_seconds);
    inst.exec = sg::this_actor::exec_init(inst.chunk_work)->set_host(platform_.device(inst.first_device));
    inst.exec->start();
    add(inst.exec, [this, i] { chunk_done(i); });
  }

  void chunk_done(int i) {
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
  void replan() {
    for (size_t i = 0; i < instances_.size(); ++i) {
      if (instances_[i].agent != planned_agent_[i]) move_instance(static_cast<int>(i), planned_agent_[i]);
    }
  }

  // Gives idle instance `idx` to `agent`: it loads that agent's weights from host memory (each device its shard).
  void move_instance(int idx, int agent) {
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
                       flexmarl::weight_bytes(w_.agents[agent].model) / inst.tp});
    }
    transfer(flows, inst.first_device, inst.tp, agent, "reload", [this, idx, generation] {
      if (instances_[idx].load_generation != generation) return;
      instances_[idx].loading = false;
      wake(idx);
    });
  }

  void rebalance() {
    for (const flexmarl::Migration& m : balancer_->balance_within_agents()) {
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
    if (std::optional<flexmarl::Reassignment> move = balancer_->balance_across_agents()) {
      move_instance(move->instance, move->to);
    }
  }

  void finish_request(int agent, int sample) {
    done_[agent][sample] = true;
    ++done_count_[agent];
    bool all_done = true;
    for (size_t a = 0; a < w_.agents.size(); ++a)
      all_done = all_done && done_count_[a] == w_.global_batch;
    if (all_done) rollout_end_ = sg::Engine::get_clock();
    if (framework_ == Framework::kSync || framework_ == Framework::kMarti) {
      bool phase_done = true;
      for (int a : phases_[static_cast<size_t>(phase_)])
        phase_done = phase_done && done_count_[a] == w_.global_batch;
      if (!phase_done) return;
      if (phase_ + 1 < static_cast<int>(phases_.size())) {
        issue_phase(phase_ + 1);
      } else if (framework_ == Framework::kSync) {
        sync_train(0);
      } else {
        for (size_t a = 0; a < w_.agents.size(); ++a)
          queue_job(static_cast<int>(a), w_.global_batch);
        schedule_trainers();
      }
      return;
    }
    // FlexMARL: the sample's next turn, where every input of it is done.
    const int turn = w_.agents[agent].turn;
    for (int next : agents_of_turn(turn + 1)) {
      bool ready = !issued_[next][sample];
      for (int prev : agents_of_turn(turn))
        ready = ready && done_[prev][sample];
      if (ready) issue(next, sample);
    }
    if (framework_ == Framework::kNoAsync) {
      if (done_count_[agent] == w_.global_batch) queue_job(agent, w_.global_batch);
    } else {
      // A micro-batch of samples from whole groups (advantages fixed once a group is complete).
      int complete = 0;
      for (int g = 0; g < w_.global_batch / w_.group; ++g) {
        bool whole = true;
        for (int s = g * w_.group; s < (g + 1) * w_.group; ++s)
          whole = whole && done_[agent][s];
        if (whole) complete += w_.group;
      }
      while (complete - queued_for_training_[agent] >= w_.micro_batch ||
             (complete == w_.global_batch && queued_for_training_[agent] < w_.global_batch)) {
        queue_job(agent, std::min(w_.micro_batch, complete - queued_for_training_[agent]));
      }
    }
    schedule_trainers();
  }

  // ---- training --------------------------------------------------------------------------------------------
  void queue_job(int agent, int samples) {
    Job job;
    job.agent = agent;
    // Samples in group order: which ones they are only matters for their lengths.
    for (int s = queued_for_training_[agent]; s < queued_for_training_[agent] + samples; ++s)
      job.samples.push_back(s);
    queued_for_training_[agent] += samples;
    job.last = queued_for_training_[agent] == w_.global_batch;
    jobs_.push_back(std::move(job));
  }

  double job_flops(const Job& job) const {
    const flexmarl::AgentRole& role = w_.agents[job.agent];
    double flops = 0;
    for (int s : job.samples)
      flops += flexmarl::train_flops(role.model, role.prompt_tokens, lengths_[job.agent][s]);
    return flops;
  }

  bool resident_elsewhere(int agent, size_t group) const {
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (g != group && groups_[g].resident == agent) return true;
    }
    return false;
  }

  // Agent-centric binding: a free group takes a job of the agent it holds, else the oldest job whose agent's
  // state is on no other group (an agent's accumulated gradients live in one place).
  void schedule_trainers() {
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].busy || jobs_.empty()) continue;
      std::optional<size_t> pick;
      for (size_t j = 0; j < jobs_.size() && !pick; ++j) {
        if (jobs_[j].agent == groups_[g].resident) pick = j;
      }
      for (size_t j = 0; j < jobs_.size() && !pick; ++j) {
        if (!resident_elsewhere(jobs_[j].agent, g)) pick = j;
      }
      if (!pick) continue;
      Job job = jobs_[*pick];
      jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(*pick));
      start_job(static_cast<int>(g), std::move(job));
    }
  }

  void start_job(int g, Job job) {
    TrainerGroup& group = groups_[g];
    group.busy = true;
    if (group.resident == job.agent) {
      train(g, std::move(job));
      return;
    }
    // Swap: the resident agent's state out to host memory, the job's agent's in, over each device's host link.
    std::vector<Flow> flows;
    const double in_bytes = flexmarl::training_state_bytes(w_.agents[job.agent].model) / group.devices;
    for (int k = 0; k < group.devices; ++k) {
      const int dev = group.first_device + k;
      if (group.resident >= 0) {
        flows.push_back({platform_.device(dev), platform_.cpu(dev),
                         flexmarl::training_state_bytes(w_.agents[group.resident].model) / group.devices});
      }
      flows.push_back({platform_.cpu(dev), platform_.device(dev), in_bytes});
    }
    group.resident = job.agent;
    transfer(flows, group.first_device, group.devices, job.agent, "swap",
             [this, g, job = std::move(job)]() mutable { train(g, std::move(job)); });
  }

  void train(int g, Job job) {
    TrainerGroup& group = groups_[g];
    const double seconds = flexmarl::train_s(job_flops(job), group.devices, device_, setup_.efficiency);
    const double start = sg::Engine::get_clock();
    sg::ExecPtr exec = sg::this_actor::exec_init(platform_.work_units(group.first_device, seconds))
                           ->set_host(platform_.device(group.first_device));
    exec->start();
    add(exec, [this, g, start, job = std::move(job)]() mutable {
      TrainerGroup& grp = groups_[g];
      busy(grp.first_device, grp.devices, start, sg::Engine::get_clock(), job.agent, "train", true);
      trained_[job.agent] += static_cast<int>(job.samples.size());
      if (job.last) {
        optimizer_and_publish(g, job.agent);
      } else {
        grp.busy = false;
        schedule_trainers();
      }
    });
  }

  void optimizer_and_publish(int g, int agent) {
    TrainerGroup& group = groups_[g];
    const spec::LlmSpec& model = w_.agents[agent].model;
    const double start = sg::Engine::get_clock();
    sg::ExecPtr exec =
        sg::this_actor::exec_init(
            platform_.work_units(group.first_device, flexmarl::optimizer_s(model, group.devices, device_)))
            ->set_host(platform_.device(group.first_device));
    exec->start();
    add(exec, [this, g, agent, start] {
      TrainerGroup& grp = groups_[g];
      busy(grp.first_device, grp.devices, start, sg::Engine::get_clock(), agent, "optimizer", true);
      grp.busy = false;
      // Publish: every device of the agent's instances gets its shard of the new weights from a trainer device.
      std::vector<Flow> flows;
      int k = 0;
      for (const Instance& inst : instances_) {
        if (inst.agent != agent) continue;
        for (int t = 0; t < inst.tp; ++t) {
          flows.push_back({platform_.device(grp.first_device + (k++ % grp.devices)),
                           platform_.device(inst.first_device + t),
                           flexmarl::weight_bytes(w_.agents[agent].model) / inst.tp});
        }
      }
      transfer(flows, grp.first_device, grp.devices, agent, "publish", [this] {
        if (++published_ == static_cast<int>(w_.agents.size())) step_done_ = true;
      });
      schedule_trainers();
    });
  }

  // Sync: agent after agent, every device trains it: state in, train, optimizer, state out (the new weights
  // reach the engines with the next step's per-phase load).
  void sync_train(int agent) {
    const int agents = static_cast<int>(w_.agents.size());
    if (agent == agents) {
      step_done_ = true;
      return;
    }
    const int devices = d_.devices;
    transfer(state_flows(agent, true), 0, devices, agent, "swap", [this, agent, devices] {
      Job job;
      job.agent = agent;
      for (int s = 0; s < w_.global_batch; ++s)
        job.samples.push_back(s);
      const double seconds = flexmarl::train_s(job_flops(job), devices, device_, setup_.efficiency) +
                             flexmarl::optimizer_s(w_.agents[agent].model, devices, device_);
      const double start = sg::Engine::get_clock();
      sg::ExecPtr exec = sg::this_actor::exec_init(platform_.work_units(0, seconds))->set_host(platform_.device(0));
      exec->start();
      add(exec, [this, agent, devices, start] {
        busy(0, devices, start, sg::Engine::get_clock(), agent, "train", true);
        transfer(state_flows(agent, false), 0, devices, agent, "swap", [this, agent] { sync_train(agent + 1); });
      });
    });
  }

  // Sync's swap of `agent`'s training state onto (in) or off every device.
  std::vector<Flow> state_flows(int agent, bool in) const {
    std::vector<Flow> flows;
    const double bytes = flexmarl::training_state_bytes(w_.agents[agent].model) / d_.devices;
    for (int dev = 0; dev < d_.devices; ++dev) {
      sg::Host* host = platform_.cpu(dev);
      sg::Host* device = platform_.device(dev);
      flows.push_back({in ? host : device, in ? device : host, bytes});
    }
    return flows;
  }

  // ---- transfers -------------------------------------------------------------------------------------------
  void transfer(const std::vector<Flow>& flows, int first_device, int devices, int agent, const char* kind,
                std::function<void()> done) {
    auto left = std::make_shared<size_t>(flows.size());
    auto callback = std::make_shared<std::function<void()>>(std::move(done));
    const double start = sg::Engine::get_clock();
    if (flows.empty()) {
      (*callback)();
      return;
    }
    for (const Flow& f : flows) {
      sg::CommPtr comm = sg::Comm::sendto_async(f.from, f.to, static_cast<uint64_t>(std::llround(f.bytes)));
      add(comm, [this, left, callback, start, first_device, devices, agent, kind] {
        if (--*left == 0) {
          busy(first_device, devices, start, sg::Engine::get_clock(), agent, kind, false);
          (*callback)();
        }
      });
    }
  }

  const FlexMarlSetup& setup_;
  const flexmarl::Workload& w_;
  const ClusterProfile& profile_;
  Platform& platform_;
  const Framework framework_;
  const flexmarl::Deployment d_;
  const flexmarl::DeviceFacts device_;

  std::vector<Instance> instances_;
  std::vector<TrainerGroup> groups_;
  std::optional<flexmarl::LoadBalancer> balancer_;
  std::vector<int> rr_;
  std::vector<int> planned_agent_;        // per instance: the deployment's agent
  std::vector<std::vector<int>> phases_;  // sync's and marti's rollout phases
  std::vector<Request> requests_;
  std::deque<Job> jobs_;
  std::vector<sg::ActivityPtr> pending_;
  std::vector<std::function<void()>> handlers_;

  int step_ = 0;
  int phase_ = 0;
  bool step_done_ = false;
  int published_ = 0;
  double rollout_end_ = 0;
  std::vector<std::vector<int>> lengths_;
  std::vector<std::vector<bool>> done_, issued_;
  std::vector<int> done_count_, queued_for_training_, trained_;

  std::vector<double> step_starts_, step_times_, rollout_times_, busy_device_s_;
  std::vector<int64_t> tokens_;
  int64_t reassignments_ = 0, migrations_ = 0;
  std::vector<BusyInterval> intervals_;
};

nlohmann::json row_to_json(const FlexMarlRow& r, bool with_intervals) {
  nlohmann::json j = {{"framework", r.framework},
                      {"workload", r.workload},
                      {"agents", r.agents},
                      {"devices", r.devices},
                      {"step_s", r.step_s},
                      {"rollout_s", r.rollout_s},
                      {"tokens_per_s", r.tokens_per_s},
                      {"utilization", r.utilization},
                      {"speedup", r.speedup},
                      {"utilization_gain", r.utilization_gain},
                      {"reassignments_per_step", r.reassignments},
                      {"migrations_per_step", r.migrations},
                      {"step_times_s", r.step_times_s}};
  if (with_intervals) {
    nlohmann::json list = nlohmann::json::array();
    for (const BusyInterval& b : r.last_step) {
      list.push_back({b.first_device, b.devices, b.start_s, b.end_s, b.agent, b.kind});
    }
    j["last_step"] = std::move(list);
  }
  return j;
}

FlexMarlRow row_from_json(const nlohmann::json& j) {
  FlexMarlRow r;
  r.framework = j.at("framework");
  r.workload = j.at("workload");
  r.agents = j.at("agents");
  r.devices = j.at("devices");
  r.step_s = j.at("step_s");
  r.rollout_s = j.at("rollout_s");
  r.tokens_per_s = j.at("tokens_per_s");
  r.utilization = j.at("utilization");
  r.reassignments = j.at("reassignments_per_step");
  r.migrations = j.at("migrations_per_step");
  r.step_times_s = j.at("step_times_s").get<std::vector<double>>();
  for (const auto& b : j.at("last_step")) {
    r.last_step.push_back({b[0], b[1], b[2], b[3], b[4], b[5]});
  }
  return r;
}

StatusOr<std::string> run_in_child(const FlexMarlSetup& setup, const ClusterProfile& profile, Framework framework,
                                   const flexmarl::Deployment& deployment) {
  TwinEngine twin;
  sg::Engine& engine = twin.engine();
  auto platform = Platform::build(profile, deployment.devices);
  if (!platform.is_ok()) return platform.status();
  Run run(setup, profile, **platform, framework, deployment);
  Status status = Status::ok();
  sg::Actor::create("orchestrator", (*platform)->cpu(0), [&] { status = run.run(); });
  engine.run();
  CT_RETURN_IF_ERROR(status);
  return row_to_json(run.result(), true).dump();
}

}  // namespace

flexmarl::DeviceFacts device_facts(const ClusterProfile& profile) {
  flexmarl::DeviceFacts d;
  auto it = profile.device.peak_flops.find("bf16");
  d.peak_flops = it != profile.device.peak_flops.end() ? it->second : profile.device.peak_flops.begin()->second;
  d.memory_bytes = profile.device.memory_bytes;
  d.memory_bandwidth = profile.device.memory_bandwidth;
  return d;
}

int flexmarl_devices(const FlexMarlSetup& setup, const ClusterProfile& profile) {
  if (setup.devices > 0) return setup.devices;
  return std::min(profile.devices(), static_cast<int>(setup.workload.agents.size()) * profile.devices_per_node);
}

Status validate(const FlexMarlSetup& setup, const ClusterProfile& profile) {
  CT_RETURN_IF_ERROR(flexmarl::validate(setup.workload));
  if (!(setup.gap_threshold > 0)) {
    return Status::invalid_argument("--load-gap " + format_number("%g", setup.gap_threshold) +
                                    ": the load-gap threshold must be > 0 (requests)");
  }
  if (setup.steps < 2) {
    return Status::invalid_argument("--steps " + std::to_string(setup.steps) +
                                    ": must be >= 2 (the first step is warm-up)");
  }
  if (setup.devices < 0)
    return Status::invalid_argument("--devices " + std::to_string(setup.devices) + ": must be >= 1");
  // check_worker_count's rule, under this command's flag name.
  if (Status fits = check_worker_count(profile, flexmarl_devices(setup, profile)); !fits.is_ok()) {
    std::string message = fits.message();
    if (message.rfind("--workers", 0) == 0) message = "--devices" + message.substr(9);
    return Status::invalid_argument(message);
  }
  if (profile.device.peak_flops.empty() || !(profile.device.memory_bytes > 0) ||
      !(profile.device.memory_bandwidth > 0)) {
    return Status::invalid_argument("profile '" + profile.name +
                                    "': the FlexMARL twin needs the device's peak_flops, memory and memory_bandwidth");
  }
  const flexmarl::EngineEfficiency& e = setup.efficiency;
  for (double v : {e.decode, e.prefill, e.train}) {
    if (!(v > 0 && v <= 1)) {
      return Status::invalid_argument("engine efficiency " + format_number("%g", v) + " must be in (0, 1]");
    }
  }
  return Status::ok();
}

StatusOr<FlexMarlRow> run_flexmarl(const FlexMarlSetup& setup, const ClusterProfile& profile, Framework framework) {
  CT_RETURN_IF_ERROR(validate(setup, profile));
  const auto wall_start = std::chrono::steady_clock::now();
  auto deployment =
      flexmarl::deploy(setup.workload, framework, flexmarl_devices(setup, profile), device_facts(profile));
  if (!deployment.is_ok()) return deployment.status();
  auto payload = run_isolated([&] { return run_in_child(setup, profile, framework, *deployment); });
  if (!payload.is_ok()) return payload.status();
  FlexMarlRow row = row_from_json(nlohmann::json::parse(*payload));
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return row;
}

StatusOr<std::vector<FlexMarlRow>> run_flexmarl_frameworks(
    const FlexMarlSetup& setup, const ClusterProfile& profile, const std::vector<Framework>& frameworks,
    const std::function<void(const FlexMarlRow&, int, int)>& progress) {
  std::vector<FlexMarlRow> rows;
  for (Framework f : frameworks) {
    auto row = run_flexmarl(setup, profile, f);
    if (!row.is_ok()) return row.status();
    rows.push_back(std::move(*row));
    if (progress) progress(rows.back(), static_cast<int>(rows.size()), static_cast<int>(frameworks.size()));
  }
  const FlexMarlRow* sync = nullptr;
  for (const FlexMarlRow& r : rows) {
    if (r.framework == "sync") sync = &r;
  }
  if (sync != nullptr) {
    const double sync_step = sync->step_s, sync_util = sync->utilization;
    for (FlexMarlRow& r : rows) {
      r.speedup = sync_step / r.step_s;
      r.utilization_gain = sync_util > 0 ? r.utilization / sync_util : 0;
    }
  }
  return rows;
}

StatusOr<SyncFit> calibrate_sync(const FlexMarlSetup& setup, const ClusterProfile& profile, double target_s) {
  SyncFit fit;
  FlexMarlSetup s = setup;
  auto step_at = [&](double efficiency) -> StatusOr<double> {
    s.efficiency.decode = efficiency;
    ++fit.runs;
    auto row = run_flexmarl(s, profile, Framework::kSync);
    if (!row.is_ok()) return row.status();
    return row->step_s;
  };
  // T(e) = a + b / e: two runs give a and b; then Newton-like refinement on the same form.
  double e1 = 1.0, e2 = 0.25;
  auto t1 = step_at(e1);
  if (!t1.is_ok()) return t1.status();
  if (*t1 > target_s) {
    return Status::invalid_argument("calibrate: sync takes " + format_number("%.1f", *t1) +
                                    " s per step even at full decode efficiency, above the target " +
                                    format_number("%.1f", target_s) + " s");
  }
  auto t2 = step_at(e2);
  if (!t2.is_ok()) return t2.status();
  double ta = *t1, tb = *t2;
  double e = e1;
  for (int round = 0; round < 6; ++round) {
    const double b = (tb - ta) / (1 / e2 - 1 / e1);
    const double a = ta - b / e1;
    if (!(b > 0) || !(target_s > a)) {
      return Status::invalid_argument("calibrate: sync's step does not fall with decode efficiency toward " +
                                      format_number("%.1f", target_s) + " s");
    }
    e = std::clamp(b / (target_s - a), 1e-3, 1.0);
    auto t = step_at(e);
    if (!t.is_ok()) return t.status();
    fit.step_s = *t;
    if (std::abs(*t - target_s) <= 1e-4 * target_s) break;
    // Keep the two points nearest the target.
    if (std::abs(ta - target_s) > std::abs(tb - target_s)) {
      e1 = e;
      ta = *t;
    } else {
      e2 = e;
      tb = *t;
    }
  }
  fit.decode_efficiency = e;
  return fit;
}

std::string flexmarl_rows_json(const std::vector<FlexMarlRow>& rows, const std::string& extra) {
  nlohmann::json list = nlohmann::json::array();
  for (const FlexMarlRow& r : rows)
    list.push_back(row_to_json(r, false));
  nlohmann::json doc = extra.empty() ? nlohmann::json::object() : nlohmann::json::parse(extra);
  doc["rows"] = std::move(list);
  return doc.dump(2) + "\n";
}

std::string flexmarl_rows_csv(const std::vector<FlexMarlRow>& rows) {
  std::string out =
      "framework,workload,agents,devices,step_s,rollout_s,tokens_per_s,utilization,speedup,utilization_gain,"
      "reassignments_per_step,migrations_per_step\n";
  for (const FlexMarlRow& r : rows) {
    out += r.framework + "," + r.workload + "," + std::to_string(r.agents) + "," + std::to_string(r.devices) + "," +
           format_number("%.6g", r.step_s) + "," + format_number("%.6g", r.rollout_s) + "," +
           format_number("%.6g", r.tokens_per_s) + "," + format_number("%.6g", r.utilization) + "," +
           format_number("%.6g", r.speedup) + "," + format_number("%.6g", r.utilization_gain) + "," +
           std::to_string(r.reassignments) + "," + std::to_string(r.migrations) + "\n";
  }
  return out;
}

std::string flexmarl_rows_table(const std::vector<FlexMarlRow>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %-10s %7s %9s %9s %10s %7s %8s %8s\n", "framework", "workload", "devices",
                "step_s", "rollout_s", "tokens/s", "util", "speedup", "util_x");
  std::string out = line;
  for (const FlexMarlRow& r : rows) {
    std::snprintf(line, sizeof line, "%-20s %-10s %7d %9.1f %9.1f %10.0f %6.1f%% %8s %8s\n", r.framework.c_str(),
                  r.workload.c_str(), r.devices, r.step_s, r.rollout_s, r.tokens_per_s, 100 * r.utilization,
                  ratio_or_dash(r.speedup).c_str(), ratio_or_dash(r.utilization_gain).c_str());
    out += line;
  }
  return out;
}

std::string flexmarl_timeline_csv(const FlexMarlRow& row, int bins) {
  double end = 0;
  for (const BusyInterval& b : row.last_step)
    end = std::max(end, b.end_s);
  const double width = end > 0 ? end / bins : 1;
  std::vector<std::vector<double>> busy(static_cast<size_t>(row.devices), std::vector<double>(bins, 0.0));
  for (const BusyInterval& b : row.last_step) {
    if (b.kind != "decode" && b.kind != "train" && b.kind != "optimizer") continue;
    for (int k = 0; k < bins; ++k) {
      const double overlap = std::min(b.end_s, (k + 1) * width) - std::max(b.start_s, k * width);
      if (overlap <= 0) continue;
      for (int dev = b.first_device; dev < b.first_device + b.devices && dev < row.devices; ++dev) {
        busy[dev][k] += overlap / width;
      }
    }
  }
  std::string out = "device,time_s,busy\n";
  for (int dev = 0; dev < row.devices; ++dev) {
    for (int k = 0; k < bins; ++k) {
      out += std::to_string(dev) + "," + format_number("%.4g", (k + 0.5) * width) + "," +
             format_number("%.4g", std::min(1.0, busy[dev][k])) + "\n";
    }
  }
  return out;
}

Status write_flexmarl_trace(const FlexMarlRow& row, const std::string& platform, const std::string& path) {
  traces::Metadata m;
  m.source = traces::Source::kSim;
  m.system = "flexmarl";
  m.variant = row.framework;
  m.world_size = row.devices;
  m.hardware = platform;
  m.config_json = "{\"workload\":\"" + row.workload + "\",\"agents\":" + std::to_string(row.agents) + "}";
  m.clustertwin_version = std::string(version());
  m.streams = {"compute", "copy", "comm"};
  auto writer = traces::TraceWriter::create(path, m);
  if (!writer.is_ok()) return writer.status();
  std::vector<BusyInterval> sorted = row.last_step;
  std::stable_sort(sorted.begin(), sorted.end(), [](const BusyInterval& a, const BusyInterval& b) {
    return std::tie(a.first_device, a.start_s) < std::tie(b.first_device, b.start_s);
  });
  // A group's job (a trainer group, a multi-device instance) is drawn on
  // each of its devices, as a collective is on each rank.
  std::vector<traces::Event> events;
  for (const BusyInterval& b : sorted) {
    traces::Event e;
    e.name = b.kind + " agent" + std::to_string(b.agent);
    const bool copy = b.kind == "swap" || b.kind == "reload";
    e.category = copy                  ? traces::Category::kCopy
                 : b.kind == "publish" ? traces::Category::kComm
                                       : traces::Category::kCompute;
    e.stream = copy ? 1 : b.kind == "publish" ? 2 : 0;
    e.ts_us = b.start_s * 1e6;
    e.dur_us = (b.end_s - b.start_s) * 1e6;
    e.group_size = b.devices;
    for (int d = b.first_device; d < b.first_device + b.devices && d < row.devices; ++d) {
      e.rank = d;
      events.push_back(e);
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const traces::Event& a, const traces::Event& b) {
    return std::tie(a.rank, a.ts_us) < std::tie(b.rank, b.ts_us);
  });
  for (const traces::Event& e : events)
    (*writer)->write(e);
  return (*writer)->close();
}

}  // namespace clustertwin::sim
