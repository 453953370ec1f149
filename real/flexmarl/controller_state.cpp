// The controller's state between steps (controller.h): the agents' published
// weights, last gradients and host copies of their trainer state, the
// schedule's carry (models/flexmarl/orchestrator.h) and the report's steps
// so far, into and out of a StateDump, for checkpoints and --dump-state.

#include "real/core/state_tensors.h"
#include "real/flexmarl/controller.h"

namespace clustertwin::real::flexmarl {
namespace {

namespace cfs = clustertwin::models::flexmarl;

// The carry as int64 tensors: holders [agents, ranks] and cached [ranks, agents], -1 where none.
void add_carry(StateDump& dump, const cfs::OrchestratorCarry& c) {
  const int64_t ranks = static_cast<int64_t>(c.cached.size()), agents = cfs::kTaskTurns;
  at::Tensor holders = at::full({agents, ranks}, -1, at::kLong);
  at::Tensor cached = at::full({ranks, agents}, -1, at::kLong);
  for (int64_t a = 0; a < agents; ++a) {
    const std::vector<int>& h = c.holders[static_cast<size_t>(a)];
    for (size_t k = 0; k < h.size(); ++k)
      holders[a][static_cast<int64_t>(k)] = h[k];
  }
  for (int64_t r = 0; r < ranks; ++r) {
    for (const auto& [agent, version] : c.cached[static_cast<size_t>(r)])
      cached[r][agent] = version;
  }
  const cfs::OrchestratorCounts& n = c.counts;
  dump.tensors.push_back(dump_tensor(
      "schedule.versions", at::tensor(std::vector<int64_t>(c.versions.begin(), c.versions.end()), at::kLong)));
  dump.tensors.push_back(dump_tensor("schedule.holders", holders));
  dump.tensors.push_back(dump_tensor("schedule.cached", cached));
  if (!c.instance_agents.empty()) {
    dump.tensors.push_back(
        dump_tensor("schedule.instance_agents",
                    at::tensor(std::vector<int64_t>(c.instance_agents.begin(), c.instance_agents.end()), at::kLong)));
  }
  dump.tensors.push_back(dump_tensor(
      "schedule.counts",
      at::tensor(std::vector<int64_t>{n.swaps, n.reassignments, n.migrations, n.weight_loads, n.jobs}, at::kLong)));
}

StatusOr<cfs::OrchestratorCarry> read_carry(const StateDump& dump, const std::string& file, int64_t ranks) {
  const int64_t agents = cfs::kTaskTurns;
  auto versions = restore_tensor(dump, file, "schedule.versions", at::kLong, {agents});
  if (!versions.is_ok()) return versions.status();
  auto holders = restore_tensor(dump, file, "schedule.holders", at::kLong, {agents, ranks});
  if (!holders.is_ok()) return holders.status();
  auto cached = restore_tensor(dump, file, "schedule.cached", at::kLong, {ranks, agents});
  if (!cached.is_ok()) return cached.status();
  const int64_t instances = dump_leading_dim(dump, "schedule.instance_agents");
  auto instance_agents = restore_tensor(dump, file, "schedule.instance_agents", at::kLong, {instances});
  if (instances > 0 && !instance_agents.is_ok()) return instance_agents.status();
  auto counts = restore_tensor(dump, file, "schedule.counts", at::kLong, {5});
  if (!counts.is_ok()) return counts.status();
  cfs::OrchestratorCarry c;
  c.cached.resize(static_cast<size_t>(ranks));
  for (int64_t a = 0; a < agents; ++a) {
    c.versions[static_cast<size_t>(a)] = (*versions)[a].item<int64_t>();
    for (int64_t r = 0; r < ranks; ++r) {
      const int64_t holder = (*holders)[a][r].item<int64_t>(), version = (*cached)[r][a].item<int64_t>();
      if (holder >= 0) c.holders[static_cast<size_t>(a)].push_back(static_cast<int>(holder));
      if (version >= 0) c.cached[static_cast<size_t>(r)][static_cast<int>(a)] = version;
    }
  }
  for (int64_t i = 0; i < instances; ++i)
    c.instance_agents.push_back(static_cast<int>((*instance_agents)[i].item<int64_t>()));
  const int64_t* n = counts->data_ptr<int64_t>();
  c.counts = cfs::OrchestratorCounts{n[0], n[1], n[2], n[3], n[4]};
  return c;
}

}  // namespace

StatusOr<StateDump> Controller::state_dump() const {
  auto carry = orchestrator_->carry();
  if (!carry.is_ok()) return carry.status();
  StateDump dump;
  dump.rank = comm_.rank();
  dump.world = comm_.world_size();
  for (int a = 0; a < kAgents; ++a) {
    const std::string& name = cfs::task_agent_name(a);
    const size_t ai = static_cast<size_t>(a);
    dump.tensors.push_back(dump_tensor(name + ".weights", weights_[ai]));
    if (gradients_[ai].defined()) dump.tensors.push_back(dump_tensor(name + ".gradient", gradients_[ai]));
    dump.tensors.push_back(dump_tensor(name + ".host_state", host_state_[ai]));
  }
  add_carry(dump, *carry);
  return dump;
}

Status Controller::restore(const StateDump& dump, const std::string& file, int64_t next_step) {
  CT_RETURN_IF_ERROR(create());
  for (int a = 0; a < kAgents; ++a) {
    const std::string& name = cfs::task_agent_name(a);
    const size_t ai = static_cast<size_t>(a);
    auto weights = restore_tensor(dump, file, name + ".weights", at::kDouble, {weights_[ai].numel()});
    if (!weights.is_ok()) return weights.status();
    auto gradient = restore_tensor(dump, file, name + ".gradient", at::kDouble, {weights_[ai].numel()});
    if (!gradient.is_ok()) return gradient.status();
    auto host_state = restore_tensor(dump, file, name + ".host_state", at::kDouble, {host_state_[ai].numel()});
    if (!host_state.is_ok()) return host_state.status();
    weights_[ai] = *weights;
    gradients_[ai] = *gradient;
    host_state_[ai] = *host_state;
  }
  auto carry = read_carry(dump, file, o_.orchestrator.workers + 1);
  if (!carry.is_ok()) return carry.status();
  Status resumed = orchestrator_->resume(*carry);
  if (!resumed.is_ok()) return Status::invalid_argument(file + ": " + resumed.message());
  CT_RETURN_IF_ERROR(restore_results(dump, file, next_step));
  first_step_ = next_step;
  return Status::ok();
}

void Controller::add_results(StateDump& dump) const {
  const int64_t steps = static_cast<int64_t>(report_.steps.size());
  const int64_t batch = o_.orchestrator.queries * o_.orchestrator.group;
  at::Tensor reward = at::zeros({steps, kAgents}, at::kDouble), seconds = at::zeros({steps}, at::kDouble);
  at::Tensor generated = at::zeros({steps}, at::kLong), tokens = at::zeros({steps, kAgents, batch}, at::kLong);
  for (int64_t s = 0; s < steps; ++s) {
    const StepReport& r = report_.steps[static_cast<size_t>(s)];
    seconds[s] = r.seconds;
    generated[s] = r.generated_tokens;
    for (int64_t a = 0; a < kAgents; ++a) {
      reward[s][a] = r.mean_reward[static_cast<size_t>(a)];
      const std::vector<int64_t>& lengths = r.response_tokens[static_cast<size_t>(a)];
      tokens[s][a].copy_(at::tensor(lengths, at::kLong));
    }
  }
  dump.tensors.push_back(dump_tensor("results.mean_reward", reward));
  dump.tensors.push_back(dump_tensor("results.seconds", seconds));
  dump.tensors.push_back(dump_tensor("results.generated_tokens", generated));
  dump.tensors.push_back(dump_tensor("results.response_tokens", tokens));
}

Status Controller::restore_results(const StateDump& dump, const std::string& file, int64_t steps) {
  const int64_t batch = o_.orchestrator.queries * o_.orchestrator.group;
  auto reward = restore_tensor(dump, file, "results.mean_reward", at::kDouble, {steps, kAgents});
  if (!reward.is_ok()) return reward.status();
  auto seconds = restore_tensor(dump, file, "results.seconds", at::kDouble, {steps});
  if (!seconds.is_ok()) return seconds.status();
  auto generated = restore_tensor(dump, file, "results.generated_tokens", at::kLong, {steps});
  if (!generated.is_ok()) return generated.status();
  auto tokens = restore_tensor(dump, file, "results.response_tokens", at::kLong, {steps, kAgents, batch});
  if (!tokens.is_ok()) return tokens.status();
  report_.steps.assign(static_cast<size_t>(steps), StepReport{});
  for (int64_t s = 0; s < steps; ++s) {
    StepReport& r = report_.steps[static_cast<size_t>(s)];
    r.seconds = (*seconds)[s].item<double>();
    r.generated_tokens = (*generated)[s].item<int64_t>();
    for (int64_t a = 0; a < kAgents; ++a) {
      r.mean_reward[static_cast<size_t>(a)] = (*reward)[s][a].item<double>();
      const at::Tensor row = (*tokens)[s][a].contiguous();
      r.response_tokens[static_cast<size_t>(a)].assign(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + batch);
    }
  }
  return Status::ok();
}

}  // namespace clustertwin::real::flexmarl
