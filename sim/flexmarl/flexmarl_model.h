#pragma once

// The FlexMARL twin's model (internal to sim/flexmarl): one orchestrator
// actor's state and its reactions to SimGrid activities finishing. The
// public entry points are in flexmarl_twin.h; the model is split by concern:
//
//   flexmarl_model.cpp     steps, busy intervals, the row of a run
//   flexmarl_rollout.cpp   rollout instances: continuous batching, turns,
//                          the load balancer's moves
//   flexmarl_training.cpp  trainer groups: micro-batches, agent-centric
//                          binding, state swaps, publish; transfers
//
// Callers never touch SimGrid: run_in_child (flexmarl_twin.cpp) builds the
// platform, runs the model in an actor and serialises its row.

#include <simgrid/forward.h>

#include <deque>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "models/flexmarl/frameworks.h"
#include "models/flexmarl/load_balancer.h"
#include "models/flexmarl/schedule.h"
#include "sim/core/platform.h"
#include "sim/core/reactor.h"
#include "sim/flexmarl/flexmarl_row.h"
#include "sim/flexmarl/flexmarl_setup.h"

namespace clustertwin::sim::flexmarl::detail {

namespace sg = simgrid::s4u;
using models::flexmarl::Framework;

constexpr double kDoneTokens = 1e-6;  // a request with fewer tokens left is finished

struct Request {
  int agent = 0, sample = 0;
  int prompt = 0;
  double remaining = 0;  // response tokens still to generate
  double context = 0;    // prompt plus tokens generated so far
  bool prefilled = false;
};

struct Instance {
  int agent = 0;
  int first_device = 0;
  int tp = 1;
  int slots = 1;
  std::deque<int> queue;    // request ids waiting for a slot
  std::vector<int> active;  // request ids being decoded
  bool loading = false;     // loading another agent's weights
  int load_generation = 0;  // which load the instance waits for (a second move supersedes the first)
  // The chunk running now (exec is null when idle).
  sg::ExecPtr exec;
  double chunk_start = 0, chunk_prefill = 0, chunk_iteration = 0, chunk_tokens = 0, chunk_seconds = 0;
  double chunk_work = 0;
  std::vector<int> chunk_prefilling;  // requests whose prefill the chunk holds
};

struct Job {
  int agent = 0;
  std::vector<int> samples;
};

// One host-to-host transfer of a transfer set.
struct Flow {
  sg::Host* from;
  sg::Host* to;
  double bytes;
};

struct TrainerGroup {
  int first_device = 0, devices = 0;
  int resident = -1;  // the agent whose state is on the devices
  bool busy = false;
};

class FlexMarlRun {
 public:
  FlexMarlRun(const FlexMarlSetup& setup, const cluster::ClusterProfile& profile, Platform& platform,
              Framework framework, models::flexmarl::Deployment deployment)
      : setup_(setup),
        w_(setup.workload),
        profile_(profile),
        platform_(platform),
        framework_(framework),
        d_(std::move(deployment)),
        device_(device_facts(profile)),
        efficiency_(models::flexmarl::engine_efficiency(setup.efficiency, framework)) {}

  /// Runs setup.steps steps (an actor of the engine); the first error stops it.
  Status run();
  /// The measured steps (all but the first) as a table row, with the last step's intervals.
  FlexMarlRow result() const;
  /// Whether every step ran.
  bool finished() const { return static_cast<int>(step_times_.size()) == setup_.steps; }
  /// The simulated time each step ended, the first (warm-up) step included.
  std::vector<double> step_ends() const;

 private:
  // ---- the event loop (flexmarl_model.cpp) ------------------------------------------------------------------------
  void add(sg::ActivityPtr activity, std::function<void()> on_done) {
    reactor_.add(std::move(activity), std::move(on_done));
  }
  Status run_step(int step);
  void busy(int first_device, int devices, double start, double end, int agent, const char* kind, bool work);

  // ---- rollout (flexmarl_rollout.cpp) -----------------------------------------------------------------------------

  void start_rollout();
  void issue_phase(int phase);
  bool balanced() const { return framework_ == Framework::kFlexMarl || framework_ == Framework::kNoAsync; }
  void issue(int agent, int sample);
  // Queries: sample s belongs to query s / group. admit() lets the next query in: its samples of the phase's
  // agents (sync, marti) or of the first turn (flexmarl); a query is let in once one before it is answered by
  // every agent that answers it now, so at most the schedule's queries_in_flight are in flight.
  void admit();
  bool answered(int query, const std::vector<int>& agents) const;
  std::vector<int> rollout_agents() const;

  // Starts a chunk on an idle instance, or cuts the running one when a queued request could join it.
  void wake(int i);
  void cut(int i);

  // Credits `elapsed` nominal seconds of the current chunk: prefill first, then decode iterations.
  void advance(int i, double elapsed);
  void start_chunk(int i);
  void chunk_done(int i);

  // At a step's start the orchestrator gives every instance back to the agent the deployment planned for it
  // (the balancer's moves answer one step's load; the next step starts with the first turn again).
  void replan();

  // Gives idle instance `idx` to `agent`: it loads that agent's weights from host memory (each device its shard).
  void move_instance(int idx, int agent);
  void rebalance();
  void finish_request(int agent, int sample);

  // ---- training (flexmarl_training.cpp) ---------------------------------------------------------------------------
  void queue_job(int agent, int samples);
  double job_sample_seconds(const Job& job) const;  // its samples' training on one device (sample_train_s)
  bool resident_elsewhere(int agent, size_t group) const;

  // Agent-centric binding: a free group takes a job of the agent it holds, else the oldest job whose agent's
  // state is on no other group (an agent's accumulated gradients live in one place).
  void schedule_trainers();
  void start_job(int g, Job job);
  void train(int g, Job job);
  void optimizer_and_publish(int g, int agent);

  // Sync: agent after agent, every device trains it: state in, train, optimizer, state out (the new weights
  // reach the engines with the next step's per-phase load).
  void sync_train(int agent);

  // Sync's swap of `agent`'s training state onto (in) or off every device.
  std::vector<Flow> state_flows(int agent, bool in) const;

  // ---- transfers (flexmarl_training.cpp) --------------------------------------------------------------------------
  void transfer(const std::vector<Flow>& flows, int first_device, int devices, int agent, const char* kind,
                std::function<void()> done);

  const FlexMarlSetup& setup_;
  const models::flexmarl::Workload& w_;
  const cluster::ClusterProfile& profile_;
  Platform& platform_;
  const Framework framework_;
  const models::flexmarl::Deployment d_;
  const models::flexmarl::DeviceFacts device_;
  const models::flexmarl::EngineEfficiency efficiency_;  // this framework's (sync decodes at its own)

  std::vector<Instance> instances_;
  std::vector<TrainerGroup> groups_;
  std::optional<models::flexmarl::LoadBalancer> balancer_;
  std::vector<int> rr_;
  std::vector<int> planned_agent_;                      // per instance: the deployment's agent
  std::optional<models::flexmarl::Schedule> schedule_;  // the framework's decisions (set by run())
  std::vector<models::flexmarl::Decision> decisions_;   // as taken, every step
  std::vector<Request> requests_;
  std::deque<Job> jobs_;
  Reactor reactor_;

  int step_ = 0;
  int phase_ = 0;
  int admitted_ = 0;  // queries let in (this phase, or this step without phases)
  bool step_done_ = false;
  int published_ = 0;
  double rollout_end_ = 0;
  std::vector<std::vector<int>> lengths_;
  std::vector<std::vector<bool>> done_, issued_;
  // rewarded_[s]: sample s's episode is over (every agent answered it), so its outcome reward, shared by every
  // agent of the episode, is known and its rows may train once their group is whole.
  std::vector<bool> rewarded_;
  std::vector<int> done_count_, queued_for_training_, trained_;

  std::vector<double> step_starts_, step_times_, rollout_times_, busy_device_s_;
  std::vector<int64_t> tokens_;
  int64_t reassignments_ = 0, migrations_ = 0;
  std::vector<BusyInterval> intervals_;
};

/// A row as JSON (with the last step's intervals when asked: the child's
/// answer to its parent) and back (flexmarl_output.cpp).
nlohmann::json row_to_json(const FlexMarlRow& r, bool with_intervals);
FlexMarlRow row_from_json(const nlohmann::json& j);

}  // namespace clustertwin::sim::flexmarl::detail
