// Collectives in a plan run: each simulated member arrives at the
// collective's instance and waits; the last to arrive runs it for everyone,
// by its measured or fitted time, as CPU work on shared cores, or as flows
// over the network (collective_runner.h), priced once where it has the
// fabric to itself (collective_shortcut.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "common/check.h"
#include "sim/core/collective_runner.h"
#include "sim/core/collective_schedule.h"
#include "sim/core/plan_run_impl.h"
#include "sim/core/platform.h"

namespace clustertwin::sim {
namespace {

namespace sg = simgrid::s4u;
using models::Task;

}  // namespace

void PlanRunImpl::collective(int rank, int step, const Task& t) {
  const models::Collective& c = *t.collective;
  const int world = options_.workers;
  std::vector<int> members;
  InstanceKey key;
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
  } else if (members.size() == 1) {
    const double local = local_copy_seconds(t, rank);
    if (local > 0) sg::this_actor::sleep_for(local);
  } else {
    run_network_collective(t, key, members);
  }
  {
    std::unique_lock<sg::Mutex> lock(*inst.mutex);
    inst.done = true;
  }
  inst.cv->notify_all();
}

double PlanRunImpl::local_copy_seconds(const Task& t, int rank) const {
  // A group of one moves nothing over a network. c10d calls all-reduce and broadcast in place (NCCL and Gloo
  // then do nothing); all-to-all, all-gather and reduce-scatter write another buffer: a copy on the device,
  // its bytes read and written once at the device's memory bandwidth.
  const models::CollectiveOp op = t.collective->op;
  if (op != models::CollectiveOp::kAllToAll && op != models::CollectiveOp::kAllGather &&
      op != models::CollectiveOp::kReduceScatter)
    return 0;
  const cluster::DeviceType& device = platform_.profile().device_type_of(rank);
  const double rate = device.memory_bandwidth * device.memory_efficiency;
  return rate > 0 ? 2.0 * static_cast<double>(t.bytes) / rate * platform_.profile().slowdown_of(rank) : 0;
}

double PlanRunImpl::os_wait(const Task& t, int members, int rank) const {
  auto cost = platform_.profile().costs.find(t.cost_key);
  if (cost != platform_.profile().costs.end() && cost->second.step_wait > 0)
    return cluster::latency_steps(t.collective->op, members) * cost->second.step_wait;
  const auto& factors = platform_.profile().collectives;
  auto f = factors.find(std::string(models::collective_op_name(t.collective->op)));
  if (f == factors.end() || f->second.step_wait.empty()) return 0;
  return cluster::latency_steps(t.collective->op, members) *
         f->second.step_wait_at(ranks_on_node_[platform_.node_of(rank)]);
}

void PlanRunImpl::run_network_collective(const Task& t, const InstanceKey& key, const std::vector<int>& members) {
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
  for (int shift : sibling_shifts(c)) {
    // Symmetric mode: the groups (or the sends) of the node's other devices (the same members shifted) are
    // not simulated; their traffic joins this group's, phase by phase, so that the network sees it all.
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
  const double start = sg::Engine::get_clock();
  run_collective(platform_, *schedule, fidelity_, alone);
  if (price_key) prices_.record(*price_key, sg::Engine::get_clock() - start);
}

std::vector<int> PlanRunImpl::sibling_shifts(const models::Collective& c) const {
  std::vector<int> shifts;
  if (stride_ == 1) return shifts;
  const models::GroupSpec& g = c.group;
  if (c.op == models::CollectiveOp::kSend || c.op == models::CollectiveOp::kRecv) {
    for (int s = 1; s < stride_; ++s)
      shifts.push_back(s);  // each device's own message, a node away
  } else if (g.kind == models::GroupSpec::Kind::kStride) {
    for (int s = 1; s < std::min(g.size, stride_); ++s)
      shifts.push_back(s);  // the groups of the node's other first members
  } else if (g.kind == models::GroupSpec::Kind::kBlock && g.size < stride_) {
    for (int s = g.size; s < stride_; s += g.size)
      shifts.push_back(s);  // the node's other blocks
  }
  return shifts;
}

int64_t PlanRunImpl::effective_bytes(const models::Collective& c, int64_t bytes, int group_size) const {
  const auto& factors = platform_.profile().collectives;
  auto it = factors.find(std::string(models::collective_op_name(c.op)));
  if (it == factors.end()) return bytes;
  return static_cast<int64_t>(std::llround(static_cast<double>(bytes) * it->second.byte_factor(group_size)));
}

}  // namespace clustertwin::sim
