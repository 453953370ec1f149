#pragma once

// A worker of `run flexmarl` (ranks 1..W): a loop that runs whatever job the
// controller sends (real/flexmarl/messages.h) and answers. It holds, per
// agent, an inference copy of the policy at the version the controller last
// loaded, and the trainer state of the agents swapped in.

#include <cstdint>
#include <map>
#include <memory>

#include "real/core/communicator.h"
#include "real/core/tracer.h"
#include "real/flexmarl/grpo_trainer.h"
#include "real/flexmarl/messages.h"
#include "real/flexmarl/rollout.h"

namespace clustertwin::real::flexmarl {

/// The three agents' model shapes (planner, solver, checker): small GPTs of
/// different sizes over the task's 16 tokens, in float64 so that runs that
/// batch differently agree to ~1e-15.
ByteLmOptions task_model_options(int agent);
/// A fresh policy of `agent`, seeded (every rank builds the same one).
StatusOr<ByteLm> make_task_model(int agent, uint64_t seed);

struct WorkerOptions {
  AdamOptions adam;
  sis::LossOptions loss;
  RolloutOptions rollout;
  uint64_t seed = 0;
  bool fault_late_publish = false;   // worker 1 keeps older weights at its first load of a version >= 1 (tests)
  PayloadStore* payloads = nullptr;  // large payloads through shared memory (messages.h)
};

class Worker {
 public:
  Worker(Communicator& comm, Group& world, Tracer& tracer, WorkerOptions options)
      : comm_(comm), world_(world), tracer_(tracer), options_(std::move(options)) {}

  /// Runs jobs until kStop.
  Status run();
  /// The controller stopped the run on an error: no trace to gather.
  bool aborted() const { return aborted_; }

 private:
  Status generate(const Message& m, Message* reply);
  Status train(const Message& m, Message* reply);
  Status step(const Message& m, Message* reply);
  Status swap_in(const Message& m);
  Status swap_out(const Message& m, Message* reply);
  Status load(const Message& m);

  Communicator& comm_;
  Group& world_;
  Tracer& tracer_;
  WorkerOptions options_;
  struct Inference {
    ByteLm model{nullptr};
    int64_t version = -1;
  };
  std::map<int64_t, Inference> inference_;
  std::map<int64_t, std::unique_ptr<AgentTrainer>> trainers_;
  bool faulted_ = false;
  bool aborted_ = false;
  double cpu_s_ = 0;  // CPU seconds in jobs: the kStopped reply
  // The current job's cost drivers, for its trace event.
  double job_flops_ = 0;
  int64_t job_bytes_ = 0;
};

}  // namespace clustertwin::real::flexmarl
