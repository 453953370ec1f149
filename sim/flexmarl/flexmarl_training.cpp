// The FlexMARL twin's training: micro-batches bound to trainer groups (agent-centric),
// state swaps, the optimizer step and the weight publish; transfers as SimGrid flows.

#include <cmath>
#include <memory>
#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "sim/core/link_tally.h"
#include "sim/flexmarl/flexmarl_model.h"

namespace clustertwin::sim::flexmarl::detail {

void FlexMarlRun::queue_job(int agent, int samples) {
  Job job;
  job.agent = agent;
  // Samples in group order: which ones they are only matters for their lengths.
  for (int s = queued_for_training_[agent]; s < queued_for_training_[agent] + samples; ++s)
    job.samples.push_back(s);
  queued_for_training_[agent] += samples;
  decisions_.push_back({models::flexmarl::Decision::Kind::kMicroBatch, agent, samples});
  jobs_.push_back(std::move(job));
}

double FlexMarlRun::job_sample_seconds(const Job& job) const {
  const models::flexmarl::AgentRole& role = w_.agents[job.agent];
  double seconds = 0;
  for (int s : job.samples)
    seconds += models::flexmarl::sample_train_s(role.model, role.prompt_tokens, lengths_[job.agent][s], device_);
  return seconds;
}

bool FlexMarlRun::resident_elsewhere(int agent, size_t group) const {
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (g != group && groups_[g].resident == agent) return true;
  }
  return false;
}

// Agent-centric binding: a free group takes a job of the agent it holds, else the oldest job whose agent's
// state is on no other group (an agent's accumulated gradients live in one place).
void FlexMarlRun::schedule_trainers() {
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

void FlexMarlRun::start_job(int g, Job job) {
  TrainerGroup& group = groups_[g];
  group.busy = true;
  if (group.resident == job.agent) {
    train(g, std::move(job));
    return;
  }
  // Swap: the resident agent's state out to host memory, the job's agent's in, over each device's host link.
  std::vector<Flow> flows;
  const double in_bytes = models::flexmarl::training_state_bytes(w_.agents[job.agent].model) / group.devices;
  for (int k = 0; k < group.devices; ++k) {
    const int dev = group.first_device + k;
    if (group.resident >= 0) {
      flows.push_back({platform_.device(dev), platform_.cpu(dev),
                       models::flexmarl::training_state_bytes(w_.agents[group.resident].model) / group.devices});
    }
    flows.push_back({platform_.cpu(dev), platform_.device(dev), in_bytes});
  }
  group.resident = job.agent;
  transfer(flows, group.first_device, group.devices, job.agent, "swap",
           [this, g, job = std::move(job)]() mutable { train(g, std::move(job)); });
}

void FlexMarlRun::train(int g, Job job) {
  TrainerGroup& group = groups_[g];
  const double seconds = models::flexmarl::train_s(job_sample_seconds(job), group.devices);
  const double start = sg::Engine::get_clock();
  sg::ExecPtr exec = sg::this_actor::exec_init(platform_.work_units(group.first_device, seconds))
                         ->set_host(platform_.device(group.first_device));
  exec->start();
  add(exec, [this, g, start, job = std::move(job)]() mutable {
    TrainerGroup& grp = groups_[g];
    busy(grp.first_device, grp.devices, start, sg::Engine::get_clock(), job.agent, "train", true);
    trained_[job.agent] += static_cast<int>(job.samples.size());
    if (schedule_->publishes(trained_[job.agent])) {
      optimizer_and_publish(g, job.agent);
    } else {
      grp.busy = false;
      schedule_trainers();
    }
  });
}

void FlexMarlRun::optimizer_and_publish(int g, int agent) {
  TrainerGroup& group = groups_[g];
  const spec::LlmSpec& model = w_.agents[agent].model;
  const double start = sg::Engine::get_clock();
  sg::ExecPtr exec =
      sg::this_actor::exec_init(
          platform_.work_units(group.first_device, models::flexmarl::optimizer_s(model, group.devices, device_)))
          ->set_host(platform_.device(group.first_device));
  exec->start();
  add(exec, [this, g, agent, start] {
    TrainerGroup& grp = groups_[g];
    busy(grp.first_device, grp.devices, start, sg::Engine::get_clock(), agent, "optimizer", true);
    grp.busy = false;
    decisions_.push_back({models::flexmarl::Decision::Kind::kPublish, agent, trained_[agent]});
    // Publish: every device of the agent's instances gets its shard of the new weights from a trainer device.
    std::vector<Flow> flows;
    int k = 0;
    for (const Instance& inst : instances_) {
      if (inst.agent != agent) continue;
      for (int t = 0; t < inst.tp; ++t) {
        flows.push_back({platform_.device(grp.first_device + (k++ % grp.devices)),
                         platform_.device(inst.first_device + t),
                         models::flexmarl::weight_bytes(w_.agents[agent].model) / inst.tp});
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
void FlexMarlRun::sync_train(int agent) {
  const int agents = static_cast<int>(w_.agents.size());
  if (agent == agents) {
    step_done_ = true;
    return;
  }
  const int devices = d_.devices;
  decisions_.push_back({models::flexmarl::Decision::Kind::kMicroBatch, agent, w_.global_batch});
  transfer(state_flows(agent, true), 0, devices, agent, "swap", [this, agent, devices] {
    Job job;
    job.agent = agent;
    for (int s = 0; s < w_.global_batch; ++s)
      job.samples.push_back(s);
    const double seconds = models::flexmarl::train_s(job_sample_seconds(job), devices) +
                           models::flexmarl::optimizer_s(w_.agents[agent].model, devices, device_);
    const double start = sg::Engine::get_clock();
    sg::ExecPtr exec = sg::this_actor::exec_init(platform_.work_units(0, seconds))->set_host(platform_.device(0));
    exec->start();
    add(exec, [this, agent, devices, start] {
      busy(0, devices, start, sg::Engine::get_clock(), agent, "train", true);
      trained_[agent] = w_.global_batch;
      decisions_.push_back({models::flexmarl::Decision::Kind::kPublish, agent, trained_[agent]});
      transfer(state_flows(agent, false), 0, devices, agent, "swap", [this, agent] { sync_train(agent + 1); });
    });
  });
}

// Sync's swap of `agent`'s training state onto (in) or off every device.
std::vector<Flow> FlexMarlRun::state_flows(int agent, bool in) const {
  std::vector<Flow> flows;
  const double bytes = models::flexmarl::training_state_bytes(w_.agents[agent].model) / d_.devices;
  for (int dev = 0; dev < d_.devices; ++dev) {
    sg::Host* host = platform_.cpu(dev);
    sg::Host* device = platform_.device(dev);
    flows.push_back({in ? host : device, in ? device : host, bytes});
  }
  return flows;
}

void FlexMarlRun::transfer(const std::vector<Flow>& flows, int first_device, int devices, int agent, const char* kind,
                           std::function<void()> done) {
  auto left = std::make_shared<size_t>(flows.size());
  auto callback = std::make_shared<std::function<void()>>(std::move(done));
  const double start = sg::Engine::get_clock();
  if (flows.empty()) {
    (*callback)();
    return;
  }
  for (const Flow& f : flows) {
    // A mix counts each job's bytes on the links it shares (sim/core/link_tally.h).
    if (LinkTally* tally = platform_.link_tally(); tally != nullptr) tally->add(f.from, f.to, f.bytes);
    sg::CommPtr comm = sg::Comm::sendto_async(f.from, f.to, static_cast<uint64_t>(std::llround(f.bytes)));
    add(comm, [this, left, callback, start, first_device, devices, agent, kind] {
      if (--*left == 0) {
        busy(first_device, devices, start, sg::Engine::get_clock(), agent, kind, false);
        (*callback)();
      }
    });
  }
}

}  // namespace clustertwin::sim::flexmarl::detail
