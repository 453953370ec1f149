// The FlexMARL twin's steps: devices laid out, the event loop, the row.

#include "sim/flexmarl/flexmarl_model.h"

#include <numeric>
#include <simgrid/s4u.hpp>

#include "common/check.h"

namespace clustertwin::sim::flexmarl::detail {

Status FlexMarlRun::run() {
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
  auto balancer = models::flexmarl::LoadBalancer::create(per_agent, setup_.gap_threshold, sizes);
  if (!balancer.is_ok()) return balancer.status();
  balancer_.emplace(std::move(*balancer));
  rr_.assign(agents, 0);
  std::vector<int> turns;
  for (const models::flexmarl::AgentRole& r : w_.agents)
    turns.push_back(r.turn);
  auto schedule = models::flexmarl::Schedule::create(framework_, turns, w_.global_batch, w_.group, w_.micro_batch);
  if (!schedule.is_ok()) return schedule.status();
  schedule_.emplace(std::move(*schedule));

  for (int step = 0; step < setup_.steps; ++step) {
    CT_RETURN_IF_ERROR(run_step(step));
  }
  return Status::ok();
}

FlexMarlRow FlexMarlRun::result() const {
  FlexMarlRow row;
  row.framework = std::string(models::flexmarl::framework_name(framework_));
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
  row.decisions = decisions_;
  return row;
}

std::vector<double> FlexMarlRun::step_ends() const {
  std::vector<double> ends;
  for (size_t s = 0; s < step_times_.size(); ++s)
    ends.push_back(step_starts_[s] + step_times_[s]);
  return ends;
}

Status FlexMarlRun::run_step(int step) {
  step_ = step;
  const double start = sg::Engine::get_clock();
  step_starts_.push_back(start);
  busy_device_s_.push_back(0);
  lengths_ = models::flexmarl::response_lengths(w_, setup_.seed, step);
  int64_t tokens = 0;
  for (const auto& agent : lengths_)
    tokens += std::accumulate(agent.begin(), agent.end(), int64_t{0});
  tokens_.push_back(tokens);
  const int agents = static_cast<int>(w_.agents.size());
  done_.assign(agents, std::vector<bool>(w_.global_batch, false));
  issued_.assign(agents, std::vector<bool>(w_.global_batch, false));
  rewarded_.assign(w_.global_batch, false);
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
    if (reactor_.empty()) {
      return Status::internal("flexmarl twin: " + std::string(models::flexmarl::framework_name(framework_)) +
                              " stalled in step " + std::to_string(step) + " (nothing left to wait for)");
    }
    reactor_.run_next();
  }
  const double end = sg::Engine::get_clock();
  step_times_.push_back(end - start);
  rollout_times_.push_back(rollout_end_ - start);
  return Status::ok();
}

void FlexMarlRun::busy(int first_device, int devices, double start, double end, int agent, const char* kind,
                       bool work) {
  if (end <= start) return;
  intervals_.push_back({first_device, devices, start, end, agent, kind});
  if (work) busy_device_s_.back() += devices * (end - start);
}

}  // namespace clustertwin::sim::flexmarl::detail
