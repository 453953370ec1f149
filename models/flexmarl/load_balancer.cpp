#include "models/flexmarl/load_balancer.h"

#include <algorithm>

#include "models/common/check.h"
#include "models/common/text.h"

namespace clustertwin::flexmarl {

StatusOr<LoadBalancer> LoadBalancer::create(const std::vector<int>& instances_per_agent, double gap_threshold,
                                            const std::vector<int>& devices_per_instance) {
  if (instances_per_agent.empty()) return Status::invalid_argument("load balancer: no agents");
  if (!devices_per_instance.empty() && devices_per_instance.size() != instances_per_agent.size()) {
    return Status::invalid_argument("load balancer: " + std::to_string(devices_per_instance.size()) +
                                    " instance sizes for " + std::to_string(instances_per_agent.size()) + " agents");
  }
  if (!(gap_threshold > 0)) {
    return Status::invalid_argument("load balancer: load-gap threshold " + format_number("%g", gap_threshold) +
                                    " must be > 0 (requests)");
  }
  LoadBalancer b(static_cast<int>(instances_per_agent.size()), gap_threshold);
  b.sizes_ = devices_per_instance.empty() ? std::vector<int>(instances_per_agent.size(), 1) : devices_per_instance;
  for (size_t a = 0; a < instances_per_agent.size(); ++a) {
    if (instances_per_agent[a] < 1) {
      return Status::invalid_argument("load balancer: agent " + std::to_string(a) + " has " +
                                      std::to_string(instances_per_agent[a]) + " inference instances (needs >= 1)");
    }
    for (int i = 0; i < instances_per_agent[a]; ++i)
      b.instances_.push_back({static_cast<int>(b.instances_.size()), static_cast<int>(a), 0, 0});
  }
  return b;
}

int LoadBalancer::dispatch(int agent) {
  Instance* best = nullptr;
  for (Instance& i : instances_) {
    if (i.agent == agent && (best == nullptr || i.load() < best->load())) best = &i;
  }
  CT_CHECK(best != nullptr) << "agent " << agent << " has no instance";
  ++best->queued;
  return best->id;
}

void LoadBalancer::start(int instance) {
  Instance& i = instances_.at(static_cast<size_t>(instance));
  CT_CHECK(i.queued > 0) << "instance " << instance << " starts a request it does not have";
  --i.queued;
  ++i.running;
}

void LoadBalancer::finish(int instance) {
  Instance& i = instances_.at(static_cast<size_t>(instance));
  CT_CHECK(i.running > 0) << "instance " << instance << " finishes a request it is not running";
  --i.running;
}

std::vector<Migration> LoadBalancer::balance_within_agents() {
  std::vector<Migration> moves;
  for (int a = 0; a < agents_; ++a) {
    while (true) {
      Instance *busiest = nullptr, *idlest = nullptr;
      for (Instance& i : instances_) {
        if (i.agent != a) continue;
        if (busiest == nullptr || i.load() > busiest->load()) busiest = &i;
        if (idlest == nullptr || i.load() < idlest->load()) idlest = &i;
      }
      const int gap = busiest->load() - idlest->load();
      // Only queued requests move; half the gap evens the pair.
      const int n = std::min(busiest->queued, gap / 2);
      if (gap <= threshold_ || n <= 0) break;
      busiest->queued -= n;
      idlest->queued += n;
      moves.push_back({busiest->id, idlest->id, n});
    }
  }
  return moves;
}

bool LoadBalancer::assign(int instance, int agent) {
  Instance& i = instances_.at(static_cast<size_t>(instance));
  CT_CHECK(agent >= 0 && agent < agents_) << "agent " << agent << " of " << agents_;
  if (i.load() > 0) return false;
  i.agent = agent;
  return true;
}

int LoadBalancer::instance_count(int agent) const {
  int n = 0;
  for (const Instance& i : instances_)
    n += i.agent == agent;
  return n;
}

double LoadBalancer::load_per_instance(int agent) const {
  int load = 0, n = 0;
  for (const Instance& i : instances_) {
    if (i.agent != agent) continue;
    load += i.load();
    ++n;
  }
  return n > 0 ? static_cast<double>(load) / n : 0;
}

std::optional<Reassignment> LoadBalancer::balance_across_agents() {
  int busiest = 0;
  for (int a = 1; a < agents_; ++a) {
    if (load_per_instance(a) > load_per_instance(busiest)) busiest = a;
  }
  int idlest = busiest;
  for (int a = 0; a < agents_; ++a) {
    if (sizes_[a] == sizes_[busiest] && load_per_instance(a) < load_per_instance(idlest)) idlest = a;
  }
  if (load_per_instance(busiest) - load_per_instance(idlest) <= threshold_ || instance_count(idlest) < 2) return {};
  for (Instance& i : instances_) {
    if (i.agent == idlest && i.load() == 0) {
      i.agent = busiest;
      return Reassignment{i.id, idlest, busiest};
    }
  }
  return {};  // every instance of the idlest agent is busy: it cannot be taken mid-request
}

}  // namespace clustertwin::flexmarl
