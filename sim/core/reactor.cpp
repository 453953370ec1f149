#include "sim/core/reactor.h"

#include <simgrid/s4u.hpp>

#include "common/check.h"

namespace clustertwin::sim {

Reactor::Reactor() = default;
Reactor::~Reactor() = default;

void Reactor::add(simgrid::s4u::ActivityPtr activity, std::function<void()> on_done) {
  pending_.push_back(std::move(activity));
  handlers_.push_back(std::move(on_done));
}

bool Reactor::remove(const simgrid::s4u::ActivityPtr& activity) {
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i] == activity) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      handlers_.erase(handlers_.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
  }
  return false;
}

void Reactor::run_next() {
  CT_CHECK(!pending_.empty()) << "the reactor has nothing to wait for";
  const ssize_t i = simgrid::s4u::Activity::wait_any(pending_);
  CT_CHECK(i >= 0 && static_cast<size_t>(i) < pending_.size()) << "wait_any returned " << i;
  std::function<void()> handler = std::move(handlers_[static_cast<size_t>(i)]);
  pending_.erase(pending_.begin() + i);
  handlers_.erase(handlers_.begin() + i);
  handler();
}

}  // namespace clustertwin::sim
