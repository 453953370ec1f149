// What the orchestrator carries across a step boundary (OrchestratorCarry):
// taken for a checkpoint once every job is done, and put back by a resumed
// run in place of the initial placement.
#include <string>

#include "models/flexmarl/orchestrator.h"

namespace clustertwin::models::flexmarl {
namespace {

Status carry_mismatch(const std::string& field, const std::string& value, const std::string& allowed) {
  return Status::invalid_argument("schedule." + field + " " + value + ": " + allowed);
}

}  // namespace

bool Orchestrator::quiescent() const {
  for (const std::deque<Job>& jobs : jobs_) {
    if (!jobs.empty()) return false;
  }
  return true;
}

StatusOr<OrchestratorCarry> Orchestrator::carry() const {
  if (!quiescent()) return Status::internal("flexmarl orchestrator: a checkpoint with jobs in flight");
  OrchestratorCarry c;
  for (int a = 0; a < kAgents; ++a) {
    const size_t ai = static_cast<size_t>(a);
    // Between steps every row was trained (the publish waits for that), and the publish brought every gradient
    // home.
    if (!trained_on_[ai].empty() || !host_valid_[ai] || host_grad_[ai] || !pending_[ai].empty() ||
        !unplaced_[ai].empty()) {
      return Status::internal("flexmarl orchestrator: " + task_agent_name(a) + " has work left between steps");
    }
    c.versions[ai] = version_[ai];
    c.holders[ai] = holders_[ai];
  }
  for (const std::deque<int>& queue : queue_) {
    if (!queue.empty()) return Status::internal("flexmarl orchestrator: a rollout queue not empty between steps");
  }
  c.cached = cached_;
  if (balancer_) {
    for (const Instance& i : balancer_->instances())
      c.instance_agents.push_back(i.agent);
  }
  c.counts = counts_;
  return c;
}

Status Orchestrator::resume(const OrchestratorCarry& c) {
  if (c.cached.size() != cached_.size()) {
    return carry_mismatch("cached", std::to_string(c.cached.size()) + " ranks",
                          "this run has " + std::to_string(cached_.size()));
  }
  if (c.instance_agents.size() != queue_.size()) {
    return carry_mismatch("instance_agents", std::to_string(c.instance_agents.size()) + " instances",
                          "this run has " + std::to_string(queue_.size()));
  }
  for (int a = 0; a < kAgents; ++a) {
    const size_t ai = static_cast<size_t>(a);
    if (c.versions[ai] < 0) return carry_mismatch("versions", std::to_string(c.versions[ai]), "must be >= 0");
    for (int r : c.holders[ai]) {
      if (r <= o_.workers - o_.trainers || r > o_.workers || !separates_trainers(o_.framework)) {
        return carry_mismatch("holders", std::to_string(r), "not a trainer rank of this run");
      }
    }
    // The store's tables take the published versions one by one, as the run published them.
    ExperienceTable& t = table(a);
    for (int64_t v = t.published_version() + 1; v <= c.versions[ai]; ++v)
      CT_RETURN_IF_ERROR(t.publish(v));
    version_[ai] = c.versions[ai];
    holders_[ai] = c.holders[ai];
  }
  for (size_t i = 0; i < c.instance_agents.size(); ++i) {
    const int agent = c.instance_agents[i];
    if (agent < 0 || agent >= kAgents || !balancer_->assign(static_cast<int>(i), agent)) {
      return carry_mismatch("instance_agents", std::to_string(agent),
                            "not an agent (0.." + std::to_string(kAgents - 1) + ")");
    }
  }
  cached_ = c.cached;
  counts_ = c.counts;
  return Status::ok();
}

}  // namespace clustertwin::models::flexmarl
