#include "sim/core/plan_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <simgrid/s4u.hpp>
#include <tuple>

#include "common/check.h"
#include "common/version.h"
#include "models/plan/plan_validator.h"
#include "models/plan/task_event.h"
#include "sim/core/collective_runner.h"
#include "sim/core/collective_shortcut.h"
#include "sim/core/metrics.h"
#include "sim/core/platform.h"
#include "sim/core/task_cost.h"
#include "traces/trace_writer.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;
using models::Task;
using models::TaskKind;

}  // namespace

class PlanRun::Impl {
  // A collective in flight: who has arrived, and when it is over.
  struct Instance {
    int expected = 0;
    int arrived = 0;
    bool done = false;
    sg::MutexPtr mutex = sg::Mutex::create();
    sg::ConditionVariablePtr cv = sg::ConditionVariable::create();
  };

  // Per-rank completion flags of (step, task), and a condition to wait on them.
  struct RankState {
    std::vector<std::vector<char>> done;  // [step][task]
    sg::MutexPtr mutex = sg::Mutex::create();
    sg::ConditionVariablePtr cv = sg::ConditionVariable::create();
  };

 public:
  // `stride` 1 simulates every rank; devices_per_node simulates each node's first (symmetric mode).
  Impl(const models::Plan& plan, Platform& platform, const SimOptions& options, Fidelity fidelity,
       std::vector<std::vector<double>> seconds, int stride)
      : plan_(plan),
        platform_(platform),
        options_(options),
        fidelity_(fidelity),
        seconds_(std::move(seconds)),
        stride_(stride) {
    // On shared cores, a copy or collective priced by its cost key is CPU work; one priced by a fitted
    // network (collectives.OP.fit, a benchmark's wall time) is not.
    on_cores_.assign(plan.tasks.size(), 0);
    for (const Task& t : plan.tasks)
      on_cores_[t.id] = !t.cost_key.empty() && platform.profile().costs.count(t.cost_key) > 0;
    for (int rank = 0; rank < options.workers; ++rank) {
      const int node = platform.node_of(rank);
      if (node >= static_cast<int>(ranks_on_node_.size())) ranks_on_node_.resize(node + 1, 0);
      ++ranks_on_node_[node];
    }
    ranks_.resize(options.workers);
    for (int rank = 0; rank < options.workers; rank += stride_)
      ranks_[rank].done.assign(options.steps, std::vector<char>(plan.tasks.size(), 0));
    step_end_.assign(options.steps, 0.0);
    alone_ = exclusive_network(plan, options, platform.devices_per_node(), seconds_);
  }

  void start() {
    const int world = options_.workers;
    for (int rank = 0; rank < world; rank += stride_) {
      for (int stream = 0; stream < static_cast<int>(plan_.streams.size()); ++stream) {
        std::vector<int> tasks;
        for (const Task& t : plan_.tasks) {
          if (t.stream == stream && models::runs_on(t, rank, world)) tasks.push_back(t.id);
        }
        if (tasks.empty()) continue;
        sg::Actor::create("r" + std::to_string(rank) + "." + plan_.streams[stream], platform_.device(rank),
                          [this, rank, stream, tasks] { stream_loop(rank, stream, tasks); });
      }
    }
  }

  Status check_complete() const {
    int64_t missing = 0;
    for (int rank = 0; rank < options_.workers; rank += stride_) {
      for (int step = 0; step < options_.steps; ++step) {
        for (const Task& t : plan_.tasks) {
          if (models::runs_on(t, rank, options_.workers) && !ranks_[rank].done[step][t.id]) ++missing;
        }
      }
    }
    if (missing > 0) {
      return Status::internal("the simulation stopped with " + std::to_string(missing) +
                              " task runs not done (a deadlock in the plan)");
    }
    return Status::ok();
  }

  std::vector<traces::Event>& events() { return events_; }
  const std::vector<double>& step_end() const { return step_end_; }
  const models::Plan& plan() const { return plan_; }
  const SimOptions& options() const { return options_; }
  Fidelity fidelity() const { return fidelity_; }
  int stride() const { return stride_; }
  int64_t priced_once() const { return priced_once_; }

 private:
  bool deps_done(int rank, int step, const Task& t) const {
    const RankState& r = ranks_[rank];
    for (int d : t.deps) {
      if (models::runs_on(plan_.tasks[d], rank, options_.workers) && !r.done[step][d]) return false;
    }
    if (step > 0) {
      for (int d : t.prev_step_deps) {
        if (models::runs_on(plan_.tasks[d], rank, options_.workers) && !r.done[step - 1][d]) return false;
      }
    }
    return true;
  }

  void stream_loop(int rank, int stream, const std::vector<int>& tasks) {
    RankState& r = ranks_[rank];
    for (int step = 0; step < options_.steps; ++step) {
      for (int id : tasks) {
        const Task& t = plan_.tasks[id];
        {
          std::unique_lock<sg::Mutex> lock(*r.mutex);
          while (!deps_done(rank, step, t))
            r.cv->wait(lock);
        }
        const double start = sg::Engine::get_clock();
        execute(rank, step, t);
        const double end = sg::Engine::get_clock();
        record(rank, stream, step, t, start, end);
        {
          std::unique_lock<sg::Mutex> lock(*r.mutex);
          r.done[step][id] = 1;
        }
        r.cv->notify_all();
      }
    }
  }

  void execute(int rank, int step, const Task& t) {
    switch (t.kind) {
      case TaskKind::kCompute:
      case TaskKind::kLookup:
      case TaskKind::kHost: {
        const double amount = platform_.work_units(rank, seconds_[t.id][rank]);
        if (amount <= 0) return;
        sg::Host* host = platform_.core_pool(rank);
        if (host == nullptr) host = t.kind == TaskKind::kCompute ? platform_.device(rank) : platform_.cpu(rank);
        sg::this_actor::exec_init(amount)->set_host(host)->wait();
        return;
      }
      case TaskKind::kCopy:
        if (seconds_[t.id][rank] >= 0 && on_cores_[t.id] && platform_.core_pool(rank) != nullptr) {
          // A memcpy on shared cores.
          if (seconds_[t.id][rank] > 0)
            sg::this_actor::exec_init(platform_.work_units(rank, seconds_[t.id][rank]))
                ->set_host(platform_.core_pool(rank))
                ->wait();
        } else if (seconds_[t.id][rank] >= 0) {
          // A copy with a cost in the profile (a measured DMA): its own engine, not the host link.
          if (seconds_[t.id][rank] > 0)
            sg::this_actor::sleep_for(seconds_[t.id][rank] * platform_.profile().slowdown_of(rank));
        } else if (platform_.cpu(rank) == platform_.device(rank)) {
          // A platform file has no host side: the profile's host link prices the copy.
          const cluster::LinkSpec& link = platform_.profile().host_link;
          sg::this_actor::sleep_for(link.latency +
                                    (link.bandwidth > 0 ? static_cast<double>(t.bytes) / link.bandwidth : 0));
        } else {
          sg::Comm::sendto(platform_.cpu(rank), platform_.device(rank), static_cast<uint64_t>(t.bytes));
        }
        return;
      case TaskKind::kCollective:
        collective(rank, step, t);
        return;
    }
  }

  void collective(int rank, int step, const Task& t) {
    const models::Collective& c = *t.collective;
    const int world = options_.workers;
    std::vector<int> members;
    std::tuple<int, int, int, int> key;
    const Task* sender = &t;
    if (c.op == models::CollectiveOp::kSend || c.op == models::CollectiveOp::kRecv) {
      const int peer = ((rank + c.peer_offset) % world + world) % world;
      const int from = c.op == models::CollectiveOp::kSend ? rank : peer;
      const int to = c.op == models::CollectiveOp::kSend ? peer : rank;
      members = {from, to};
      key = {-1 - c.tag, step, from, to};
      if (c.op == models::CollectiveOp::kRecv) sender = nullptr;  // the send's size is used
    } else {
      // The list of members only where it is used: by the first arrival (to count them) and the last (to run it).
      key = {t.id, step, models::group_first(c.group, rank, world, platform_.devices_per_node()), 0};
    }
    Instance& inst = instances_[key];
    auto list_members = [&] {
      if (members.empty()) members = models::group_members(c.group, rank, world, platform_.devices_per_node());
    };
    if (inst.expected == 0) {
      list_members();
      inst.expected =
          static_cast<int>(std::count_if(members.begin(), members.end(), [this](int m) { return m % stride_ == 0; }));
    }
    if (sender != nullptr) send_bytes_[key] = t.bytes;
    if (++inst.arrived < inst.expected) {
      // A waiting member keeps no copy of the group: every rank of a world
      // collective waits at once, and 65,536 copies of 65,536 ranks are 17 GB.
      std::vector<int>().swap(members);
      std::unique_lock<sg::Mutex> lock(*inst.mutex);
      while (!inst.done)
        inst.cv->wait(lock);
      return;
    }
    // The last member to arrive runs the collective for everyone.
    list_members();
    if (seconds_[t.id][rank] >= 0 && on_cores_[t.id] && platform_.core_pool(rank) != nullptr) {
      // On shared cores the members first wait for the operating system to run their threads, once per
      // latency step (the machine's wait at this many ranks on a node, CollectiveFactor::step_wait); then each
      // member's part is CPU work (copies through the kernel), in parallel.
      const double wait = os_wait(t, static_cast<int>(members.size()), rank);
      if (wait > 0) sg::this_actor::sleep_for(wait);
      std::vector<sg::ExecPtr> parts;
      for (int m : members) {
        if (seconds_[t.id][m] > 0)
          parts.push_back(sg::this_actor::exec_init(platform_.work_units(m, seconds_[t.id][m]))
                              ->set_host(platform_.core_pool(m))
                              ->start());
      }
      for (const sg::ExecPtr& part : parts)
        part->wait();
    } else if (seconds_[t.id][rank] >= 0) {
      sg::this_actor::sleep_for(seconds_[t.id][rank]);
    } else {
      run_network_collective(t, key, members);
    }
    {
      std::unique_lock<sg::Mutex> lock(*inst.mutex);
      inst.done = true;
    }
    inst.cv->notify_all();
  }

  // A collective's wait on shared cores for its threads to run (calibrators/step_wait.h): its latency steps
  // times the profile's step_wait at the ranks on `rank`'s node; 0 without one.
  double os_wait(const Task& t, int members, int rank) const {
    const auto& factors = platform_.profile().collectives;
    auto f = factors.find(std::string(models::collective_op_name(t.collective->op)));
    if (f == factors.end() || f->second.step_wait.empty()) return 0;
    return cluster::latency_steps(t.collective->op, members) *
           f->second.step_wait_at(ranks_on_node_[platform_.node_of(rank)]);
  }

  void run_network_collective(const Task& t, const std::tuple<int, int, int, int>& key,
                              const std::vector<int>& members) {
    // The profile's factor scales per-destination sizes too (split_bytes), not only the task's bytes.
    models::Collective c = *t.collective;
    const int64_t bytes = effective_bytes(c, send_bytes_[key], static_cast<int>(members.size()));
    for (int64_t& part : c.split_bytes)
      part = effective_bytes(c, part, static_cast<int>(members.size()));
    const auto& factors = platform_.profile().collectives;
    auto factor = factors.find(std::string(models::collective_op_name(c.op)));
    if (factor != factors.end()) {
      const double setup = factor->second.peer_seconds(static_cast<int>(members.size()));
      if (setup > 0) sg::this_actor::sleep_for(setup);
    }
    // Alone on the fabric (a link tally means a job mix, whose jobs share it): priced once per distinct collective.
    const bool alone = alone_ && platform_.link_tally() == nullptr;
    std::optional<CollectivePrices::Key> price_key;
    if (alone) {
      price_key = CollectivePrices::key(c, bytes, members.front());
      if (std::optional<double> seconds = prices_.find(*price_key)) {
        ++priced_once_;
        sg::this_actor::sleep_for(*seconds);
        return;
      }
    }
    auto node_of = [this](int r) { return platform_.node_of(r); };
    auto schedule = build_schedule(c, bytes, members, node_of, t.name);
    CT_CHECK(schedule.is_ok()) << schedule.status().message();  // checked before the run
    if (stride_ > 1 && c.group.kind == models::GroupSpec::Kind::kStride) {
      // Symmetric mode: the groups of the node's other devices (the same members shifted by 1..stride-1) are
      // not simulated; their traffic joins this group's, phase by phase, so that the network sees it all.
      for (int shift = 1; shift < stride_; ++shift) {
        std::vector<int> sibling = members;
        for (int& m : sibling)
          m += shift;
        auto more = build_schedule(c, bytes, sibling, node_of, t.name);
        CT_CHECK(more.is_ok() && more->phases.size() == schedule->phases.size()) << t.name;
        for (size_t i = 0; i < more->phases.size(); ++i) {
          CT_CHECK(more->phases[i].repeats == schedule->phases[i].repeats) << t.name;
          Round& into = schedule->phases[i].round;
          Round& from = more->phases[i].round;
          into.messages.insert(into.messages.end(), from.messages.begin(), from.messages.end());
          into.exchanges.insert(into.exchanges.end(), from.exchanges.begin(), from.exchanges.end());
        }
      }
    }
    const double start = sg::Engine::get_clock();
    run_collective(platform_, *schedule, fidelity_, alone);
    if (price_key) prices_.record(*price_key, sg::Engine::get_clock() - start);
  }

  // The bytes the network carries for a collective: the task's, times the profile's factor for the op.
  int64_t effective_bytes(const models::Collective& c, int64_t bytes, int group_size) const {
    const auto& factors = platform_.profile().collectives;
    auto it = factors.find(std::string(models::collective_op_name(c.op)));
    if (it == factors.end()) return bytes;
    return static_cast<int64_t>(std::llround(static_cast<double>(bytes) * it->second.byte_factor(group_size)));
  }

  void record(int rank, int stream, int step, const Task& t, double start, double end) {
    int64_t group_size = 0, peer = -1;
    if (t.collective) {
      if (t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv) {
        peer = ((rank + t.collective->peer_offset) % options_.workers + options_.workers) % options_.workers;
        group_size = 2;
      } else {
        group_size = models::group_size(t.collective->group, rank, options_.workers, platform_.devices_per_node());
      }
    }
    traces::Event e = models::task_event(t, rank, stream, step, start * 1e6, end * 1e6, group_size, peer);
    events_.push_back(std::move(e));
    step_end_[step] = std::max(step_end_[step], end);
  }

  const models::Plan& plan_;
  Platform& platform_;
  const SimOptions& options_;
  Fidelity fidelity_;
  std::vector<std::vector<double>> seconds_;  // [task][rank] nominal seconds; -1: transfers over the network
  std::vector<char> on_cores_;                // [task]: a priced copy or collective that is CPU work on shared cores
  std::vector<int> ranks_on_node_;            // [node]: the run's ranks placed there
  int stride_ = 1;                            // simulated ranks: 0, stride, 2 stride, ...
  std::vector<RankState> ranks_;
  std::map<std::tuple<int, int, int, int>, Instance> instances_;
  std::map<std::tuple<int, int, int, int>, int64_t> send_bytes_;
  bool alone_ = false;       // exclusive_network: one collective on the fabric at a time
  CollectivePrices prices_;  // network seconds of the distinct collectives so far, when alone_
  int64_t priced_once_ = 0;  // collective runs that took a price from prices_
  std::vector<traces::Event> events_;
  std::vector<double> step_end_;
};

StatusOr<std::vector<std::vector<double>>> price_plan(const models::Plan& plan, const cluster::ClusterProfile& profile,
                                                      const SimOptions& options) {
  if (options.steps < 1)
    return Status::invalid_argument("--steps " + std::to_string(options.steps) + ": must be at least 1");
  if (options.warmup_steps < 0 || options.warmup_steps >= options.steps) {
    return Status::invalid_argument("--warmup " + std::to_string(options.warmup_steps) + ": must be in [0, steps " +
                                    std::to_string(options.steps) + ")");
  }
  if (options.drain_steps < 0 || options.warmup_steps + options.drain_steps >= options.steps) {
    return Status::invalid_argument("--drain " + std::to_string(options.drain_steps) +
                                    ": warm-up plus drain steps must leave at least one of the " +
                                    std::to_string(options.steps) + " steps to measure");
  }
  CT_RETURN_IF_ERROR(cluster::check_worker_count(profile, options.workers));
  const std::string name = plan.system + "/" + plan.variant;
  CT_RETURN_IF_ERROR(models::validate_plan(plan, name));
  CT_RETURN_IF_ERROR(models::validate_plan_for_world(plan, name, options.workers, profile.devices_per_node));
  std::vector<std::vector<double>> seconds(plan.tasks.size(), std::vector<double>(options.workers, 0.0));
  auto node_of = [&](int r) {
    return profile.simgrid_platform.empty() ? r / std::min(options.workers, profile.devices_per_node) : r;
  };
  for (const Task& t : plan.tasks) {
    if (t.kind == TaskKind::kCollective) {
      // Priced by its cost key when the profile has one (a measured collective, replayed once its members
      // meet), else by the op's fitted time (a benchmarked network), else moved as flows over the network (-1).
      const bool p2p =
          t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv;
      const std::vector<int> members =
          p2p ? std::vector<int>{}
              : models::group_members(t.collective->group, 0, options.workers, profile.devices_per_node);
      auto cost = t.cost_key.empty() ? profile.costs.end() : profile.costs.find(t.cost_key);
      const cluster::CollectiveFactor* fitted = profile.fitted_collective(t.collective->op);
      double s = -1.0;
      if (cost != profile.costs.end()) {
        s = cost->second.collective_seconds(t.collective->op, static_cast<double>(t.bytes),
                                            p2p ? 2 : static_cast<int>(members.size()),
                                            static_cast<double>(t.requests));
      } else if (!p2p && fitted != nullptr) {
        s = fitted->fitted_seconds(t.collective->op, static_cast<double>(t.bytes), static_cast<int>(members.size()));
      }
      std::fill(seconds[t.id].begin(), seconds[t.id].end(), s);
      // Reject algorithms that do not fit the group now, not inside the run.
      if (p2p) continue;
      auto schedule = build_schedule(*t.collective, t.bytes, members, node_of, t.name);
      if (!schedule.is_ok()) return schedule.status().with_context(name);
      continue;
    }
    if (t.kind == TaskKind::kCopy) {
      // Priced by its cost key when the profile has one, else moved over the host link (-1).
      auto cost = t.cost_key.empty() ? profile.costs.end() : profile.costs.find(t.cost_key);
      const double s = cost == profile.costs.end() ? -1.0
                                                   : cost->second.seconds(t.flops, static_cast<double>(t.bytes),
                                                                          static_cast<double>(t.requests));
      std::fill(seconds[t.id].begin(), seconds[t.id].end(), s);
      continue;
    }
    for (int rank = 0; rank < options.workers; ++rank) {
      auto s = task_seconds(t, profile.device_type_of(rank), profile);
      if (!s.is_ok()) return s.status().with_context(name);
      seconds[t.id][rank] = *s;
    }
  }
  return seconds;
}

bool symmetric_world(const models::Plan& plan, const cluster::ClusterProfile& profile, const SimOptions& options,
                     const std::vector<std::vector<double>>& seconds) {
  const int per_node = profile.devices_per_node;
  if (!options.symmetric || per_node < 2 || options.workers <= per_node || options.workers % per_node != 0)
    return false;
  if (!profile.simgrid_platform.empty() || !profile.slowdown.empty() || !profile.node_device_type.empty()) return false;
  if (profile.node_cores > 0) return false;  // the node's ranks share its cores: each one's load counts
  for (const Task& t : plan.tasks) {
    if (!t.ranks.empty()) return false;
    for (double s : seconds[t.id]) {
      if (s != seconds[t.id][0]) return false;
    }
    if (!t.collective) continue;
    const models::GroupSpec& g = t.collective->group;
    switch (g.kind) {
      case models::GroupSpec::Kind::kWorld:
      case models::GroupSpec::Kind::kNode:
        break;
      case models::GroupSpec::Kind::kBlock:
        if (g.size % per_node != 0) return false;
        break;
      case models::GroupSpec::Kind::kStride:
        // Members a multiple of a node apart: a node's first device is in a group of first devices, and the
        // run adds the groups of the node's other devices to its traffic (run_network_collective).
        if (g.size % per_node != 0) return false;
        break;
    }
    if (t.collective->op == models::CollectiveOp::kSend || t.collective->op == models::CollectiveOp::kRecv)
      return false;
  }
  return true;
}

Fidelity resolve_fidelity(const SimOptions& options) {
  if (!options.auto_fidelity) return options.fidelity;
  return options.workers <= kStepFidelityMaxWorkers ? Fidelity::kStep : Fidelity::kFlow;
}

PlanRun::PlanRun(const models::Plan& plan, Platform& platform, const SimOptions& options, Fidelity fidelity,
                 std::vector<std::vector<double>> seconds, int stride)
    : impl_(std::make_unique<Impl>(plan, platform, options, fidelity, std::move(seconds), stride)) {}

PlanRun::~PlanRun() = default;

void PlanRun::start() {
  impl_->start();
}

Status PlanRun::check_complete() const {
  return impl_->check_complete();
}

std::vector<traces::Event>& PlanRun::events() {
  return impl_->events();
}

SimResult PlanRun::result(const cluster::ClusterProfile& profile) const {
  const models::Plan& plan = impl_->plan();
  const SimOptions& options = impl_->options();
  SimResult result;
  result.system = plan.system;
  result.variant = plan.variant;
  result.platform = profile.name;
  result.workers = options.workers;
  result.steps = options.steps;
  result.warmup_steps = options.warmup_steps;
  result.drain_steps = options.drain_steps;
  result.fidelity = impl_->fidelity();
  result.step_end_s = impl_->step_end();
  result.events = static_cast<int64_t>(impl_->events().size());
  result.simulated_workers = (options.workers + impl_->stride() - 1) / impl_->stride();
  result.collectives_priced_once = impl_->priced_once();
  auto peak = [&](const traces::Event& e) {
    const cluster::DeviceType& device = profile.device_type_of(static_cast<int>(e.rank));
    const std::string& dtype =
        plan.tasks[*e.task_id].dtype.empty() ? profile.default_dtype : plan.tasks[*e.task_id].dtype;
    auto it = device.peak_flops.find(dtype);
    return it == device.peak_flops.end() ? 0.0 : it->second;
  };
  compute_metrics(plan, impl_->events(), peak, options.breakdown, &result);
  return result;
}

Status write_run_trace(const models::Plan& plan, const cluster::ClusterProfile& profile, const SimOptions& options,
                       const SimResult& result, std::vector<traces::Event> events, const std::string& path) {
  // Events in a fixed order (rank, stream, start) so that traces are byte-identical across runs.
  std::stable_sort(events.begin(), events.end(), [](const traces::Event& a, const traces::Event& b) {
    return std::tie(a.rank, a.stream, a.ts_us) < std::tie(b.rank, b.stream, b.ts_us);
  });
  traces::Metadata m;
  m.source = traces::Source::kSim;
  m.system = plan.system;
  m.variant = plan.variant;
  m.world_size = options.workers;
  m.hardware = profile.name;
  m.config_json = "{\"steps\":" + std::to_string(options.steps) +
                  ",\"warmup_steps\":" + std::to_string(options.warmup_steps) + ",\"fidelity\":\"" +
                  std::string(fidelity_name(result.fidelity)) +
                  "\",\"simulated_workers\":" + std::to_string(result.simulated_workers) + "}";
  m.seed = options.seed;
  m.clustertwin_version = std::string(version());
  m.streams = plan.streams;
  auto writer = traces::TraceWriter::create(path, m);
  if (!writer.is_ok()) return writer.status();
  for (const traces::Event& e : events)
    (*writer)->write(e);
  return (*writer)->close();
}

}  // namespace clustertwin::sim
