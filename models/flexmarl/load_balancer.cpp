#include "models/flexmarl/load_balancer.h"

#include <algorithm>
#include <limits>

#include "common/check.h"
#include "common/text.h"

namespace clustertwin::models::flexmarl {

StatusOr<LoadBalancer> LoadBalancer::create(const std::vector<int>& instances_per_agent, double gap_threshold,
                                            const std::vector<int>& devices_per_instance, bool keep_one) {
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
  b.keep_one_ = keep_one;
  b.unplaced_.assign(instances_per_agent.size(), 0);
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
  if (best == nullptr) {
    CT_CHECK(!keep_one_) << "agent " << agent << " has no instance";
    ++unplaced_.at(static_cast<size_t>(agent));
    return -1;
  }
  ++best->queued;
  return best->id;
}

int LoadBalancer::place_unplaced(int agent) {
  int& waiting = unplaced_.at(static_cast<size_t>(agent));
  CT_CHECK(waiting > 0) << "agent " << agent << " has no unplaced request";
  --waiting;
  const int instance = dispatch(agent);
  CT_CHECK(instance >= 0) << "agent " << agent << " still has no instance";
  return instance;
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
      if (busiest == nullptr) break;  // the agent has no instance now
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
  if (n == 0) return unplaced_.at(static_cast<size_t>(agent)) > 0 ? std::numeric_limits<double>::infinity() : 0;
  return static_cast<double>(load) / n;
}

std::optional<Reassignment> LoadBalancer::balance_across_agents() {
  int busiest = 0;
  for (int a = 1; a < agents_; ++a) {
    if (load_per_instance(a) > load_per_instance(busiest)) busiest = a;
  }
  // The giver: the idlest agent of the busiest's instance size with an idle instance to spare (with keep_one
  // every agent keeps one; without, an agent gives up its last only when it has nothing to do).
  int idlest = -1;
  Instance* give = nullptr;
  for (int a = 0; a < agents_; ++a) {
    if (a == busiest || sizes_[a] != sizes_[busiest]) continue;
    const double load = load_per_instance(a);
    if (instance_count(a) - (keep_one_ || load > 0 ? 1 : 0) < 1) continue;
    if (idlest >= 0 && load >= load_per_instance(idlest)) continue;
    for (Instance& i : instances_) {
      if (i.agent == a && i.load() == 0) {
        idlest = a;
        give = &i;
        break;
      }
    }
  }
  if (give == nullptr || load_per_instance(busiest) - load_per_instance(idlest) <= threshold_) return {};
  give->agent = busiest;
  return Reassignment{give->id, idlest, busiest};
}

}  // namespace clustertwin::models::flexmarl
