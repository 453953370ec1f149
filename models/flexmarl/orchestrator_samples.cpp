// The step's samples: making each request (its prompt, budget and response
// key), queueing it for a rollout instance, and once answered its reward and
// GRPO's advantages over its group, written to the experience store.
#include <cmath>
#include <string>

#include "common/hash.h"
#include "models/flexmarl/orchestrator.h"

namespace clustertwin::models::flexmarl {

StatusOr<std::vector<double>> group_advantages(const std::vector<double>& rewards, int group) {
  if (group < 1 || rewards.size() % static_cast<size_t>(group) != 0) {
    return Status::invalid_argument("group advantages: group " + std::to_string(group) + " does not divide " +
                                    std::to_string(rewards.size()) + " rewards");
  }
  std::vector<double> out(rewards.size());
  for (size_t g = 0; g < rewards.size(); g += static_cast<size_t>(group)) {
    double mean = 0, var = 0;
    for (int i = 0; i < group; ++i)
      mean += rewards[g + i];
    mean /= group;
    for (int i = 0; i < group; ++i)
      var += (rewards[g + i] - mean) * (rewards[g + i] - mean);
    const double sd = std::sqrt(var / group);
    for (int i = 0; i < group; ++i)
      out[g + i] = (rewards[g + i] - mean) / (sd + 1e-6);
  }
  return out;
}

int Orchestrator::new_sample(int64_t input, int trajectory, int turn) {
  const Problem problem = make_problem(o_.seed, input);
  std::vector<std::vector<int64_t>> earlier;
  for (int t = 0; t < turn; ++t) {
    earlier.push_back(samples_[static_cast<size_t>(sample_of_.at({input, trajectory, t}))].response);
  }
  TaskSample s;
  s.id = SampleId{input, turn, trajectory};
  s.agent = turn;
  s.prompt = task_prompt(problem, turn, earlier);
  s.budget = task_budget(o_.task, o_.seed, turn, input, trajectory);
  // The key: which response this sample gets, the same in every framework.
  s.key = mix64(mix64(static_cast<uint64_t>(step_) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(input)) ^
                (static_cast<uint64_t>(turn) << 32 | static_cast<uint64_t>(trajectory)));
  samples_.push_back(std::move(s));
  const int index = static_cast<int>(samples_.size()) - 1;
  sample_of_[{input, trajectory, turn}] = index;
  return index;
}

void Orchestrator::make_ready(int sample) {
  const int agent = samples_[static_cast<size_t>(sample)].agent;
  if (balancer_) {
    const int instance = balancer_->dispatch(agent);
    if (instance < 0) {
      unplaced_[static_cast<size_t>(agent)].push_back(sample);  // until an instance is reassigned to the agent
    } else {
      queue_[static_cast<size_t>(instance)].push_back(sample);
    }
  } else {
    pending_[static_cast<size_t>(agent)].push_back(sample);
  }
}

Status Orchestrator::reward(int sample, double value) {
  TaskSample& s = samples_[static_cast<size_t>(sample)];
  s.reward = value;
  s.rewarded = true;
  CT_RETURN_IF_ERROR(table(s.agent).put(s.id, s.version, "reward", value));
  // GRPO's group: every trajectory of this input at this turn.
  std::vector<int> members;
  std::vector<double> rewards;
  for (int j = 0; j < o_.group; ++j) {
    auto it = sample_of_.find({s.id.input, j, s.id.turn});
    if (it == sample_of_.end() || !samples_[static_cast<size_t>(it->second)].rewarded) return Status::ok();
    members.push_back(it->second);
    rewards.push_back(samples_[static_cast<size_t>(it->second)].reward);
  }
  auto advantages = group_advantages(rewards, o_.group);
  if (!advantages.is_ok()) return advantages.status();
  for (size_t k = 0; k < members.size(); ++k) {
    TaskSample& m = samples_[static_cast<size_t>(members[k])];
    m.advantage = (*advantages)[k];
    CT_RETURN_IF_ERROR(table(m.agent).put(m.id, m.version, "advantage", m.advantage));
  }
  return Status::ok();
}

Status Orchestrator::on_generated(int sample) {
  const TaskSample s = samples_[static_cast<size_t>(sample)];
  const Problem problem = make_problem(o_.seed, s.id.input);
  const int64_t input = s.id.input;
  const int j = s.id.trajectory;
  if (s.id.turn < kAgents - 1) make_ready(new_sample(input, j, s.id.turn + 1));
  if (s.id.turn == 1) {
    const double r = solver_reward(problem, s.response);
    CT_RETURN_IF_ERROR(reward(sample_of_.at({input, j, 0}), r));
    CT_RETURN_IF_ERROR(reward(sample, r));
  } else if (s.id.turn == 2) {
    std::vector<std::vector<int64_t>> responses;
    for (int t = 0; t < kAgents; ++t)
      responses.push_back(samples_[static_cast<size_t>(sample_of_.at({input, j, t}))].response);
    CT_RETURN_IF_ERROR(reward(sample, task_rewards(problem, responses)[2]));
  }
  return Status::ok();
}

}  // namespace clustertwin::models::flexmarl
