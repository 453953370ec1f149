#pragma once

#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Host;
}  // namespace simgrid::s4u

namespace clustertwin::sim {

/// Runs short pieces of work each in its own SimGrid actor, reusing the
/// actors. A collective at a thousand workers starts hundreds of senders and
/// receivers, and a training step runs dozens of collectives; creating a
/// SimGrid actor costs a stack, a context and two page-protection changes
/// (its guard page), which on a virtual machine took a third of a twin run.
/// Here an actor whose work is done waits, parked on its host, for the next
/// piece; actors are only created when every parked one on a host is busy.
///
/// Parked actors are daemons: the simulation ends when the twin's own actors
/// do. One pool per SimGrid engine (the Platform owns it); only call from
/// SimGrid actors.
class ActorPool {
 public:
  struct Job {
    simgrid::s4u::Host* host;
    std::function<void()> work;
  };

  ActorPool();
  ~ActorPool();
  ActorPool(const ActorPool&) = delete;
  ActorPool& operator=(const ActorPool&) = delete;

  /// Starts every job in an actor on its host, in order, and returns when all
  /// have returned. The jobs start at the current simulated time, as actors
  /// created now would.
  void run_all(std::vector<Job> jobs);

  /// Actors created so far (for tests: reuse keeps this at the peak of concurrent jobs per host).
  int actors_created() const { return created_; }

 private:
  struct Worker;
  struct Batch;
  Worker* take(simgrid::s4u::Host* host);

  std::unordered_map<simgrid::s4u::Host*, std::vector<Worker*>> parked_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int created_ = 0;
};

}  // namespace clustertwin::sim
