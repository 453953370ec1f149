#include "sim/core/actor_pool.h"

#include <simgrid/s4u.hpp>

namespace clustertwin::sim {

namespace sg = simgrid::s4u;

// The jobs of one run_all call: the caller waits on `done` until `remaining` reaches zero.
struct ActorPool::Batch {
  int remaining = 0;
  sg::SemaphorePtr done = sg::Semaphore::create(0);
};

struct ActorPool::Worker {
  sg::Host* host = nullptr;
  sg::SemaphorePtr wake = sg::Semaphore::create(0);
  std::function<void()> work;
  Batch* batch = nullptr;
};

ActorPool::ActorPool() = default;
ActorPool::~ActorPool() = default;

ActorPool::Worker* ActorPool::take(sg::Host* host) {
  std::vector<Worker*>& parked = parked_[host];
  if (!parked.empty()) {
    Worker* w = parked.back();
    parked.pop_back();
    return w;
  }
  workers_.push_back(std::make_unique<Worker>());
  Worker* w = workers_.back().get();
  w->host = host;
  ++created_;
  sg::ActorPtr actor = sg::Actor::create("pooled", host, [this, w] {
    for (;;) {
      w->wake->acquire();
      std::function<void()> work = std::move(w->work);
      Batch* batch = w->batch;
      w->work = nullptr;
      w->batch = nullptr;
      work();
      // Parked again before the caller may hand out more work.
      parked_[w->host].push_back(w);
      if (--batch->remaining == 0) batch->done->release();
    }
  });
  actor->daemonize();
  return w;
}

void ActorPool::run_all(std::vector<Job> jobs) {
  if (jobs.empty()) return;
  Batch batch;
  batch.remaining = static_cast<int>(jobs.size());
  for (Job& job : jobs) {
    Worker* w = take(job.host);
    w->work = std::move(job.work);
    w->batch = &batch;
    w->wake->release();
  }
  batch.done->acquire();
}

}  // namespace clustertwin::sim
