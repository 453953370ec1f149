#pragma once

// One actor's event loop over asynchronous SimGrid activities, shared by the
// event-driven twins (FlexMARL's and FlowTrain's cluster twins): each
// activity is started by the model and added here with what to do when it
// completes; the loop waits for the first to finish and runs its handler,
// which may start and add more.
//
//   model ── start exec/comm ──> add(activity, on_done)
//     ^                                   |
//     └────── on_done() <── run_next() <──┘   (SimGrid's wait_any)

#include <simgrid/forward.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace clustertwin::sim {

class Reactor {
 public:
  Reactor();
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  /// Watches `activity` (already started); `on_done` runs once it completes.
  void add(simgrid::s4u::ActivityPtr activity, std::function<void()> on_done);
  /// Stops watching `activity` (the caller cancels it); its handler never
  /// runs. False when it was not watched.
  bool remove(const simgrid::s4u::ActivityPtr& activity);
  bool empty() const { return pending_.empty(); }
  size_t size() const { return pending_.size(); }
  /// Waits for the first watched activity to finish (ties go to the one
  /// added first) and runs its handler. The loop must not be empty.
  void run_next();

 private:
  std::vector<simgrid::s4u::ActivityPtr> pending_;
  std::vector<std::function<void()>> handlers_;
};

}  // namespace clustertwin::sim
