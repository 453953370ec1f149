// Point-to-point tasks of a derived plan: peers checked, tags given, and
// every send matched with its recv across ranks (kineto_steps.h).

#include <map>
#include <set>
#include <tuple>

#include "models/plan/import/kineto_steps.h"

namespace clustertwin::models::kineto_detail {
namespace {

using models::CollectiveOp;
using traces::Event;

bool is_send_or_recv(const models::Task& t) {
  return t.collective && (t.collective->op == CollectiveOp::kSend || t.collective->op == CollectiveOp::kRecv);
}

int peer_of(const models::Task& t, int rank, int world) {
  return ((rank + t.collective->peer_offset) % world + world) % world;
}

std::string ordinal(int n) {
  return "#" + std::to_string(n + 1);
}

}  // namespace

Status check_peers(const traces::Trace& trace, const RankSteps& ranks, const std::string& path) {
  const int64_t world = trace.metadata.world_size;
  for (const auto& [rank, steps] : ranks) {
    for (const auto& [step, s] : steps) {
      for (const auto& [stream, list] : s.by_stream) {
        for (size_t idx : list) {
          const Event& e = trace.events[idx];
          if (!is_point_to_point(e)) continue;
          const std::string at = path + ": rank " + std::to_string(rank) + ", step " + std::to_string(step) +
                                 ", stream '" + stream_name(trace, stream) + "': event '" + e.name + "': a " +
                                 e.collective;
          const std::string to = e.collective == "send" ? " to" : " from";
          if (!e.peer) {
            return Status::invalid_argument(at + " without its peer (field 'peer': the import takes it from " +
                                            "c10d's 'Dst Rank' / 'Src Rank', or 'Rank' through the group's ranks; " +
                                            "this trace records neither)");
          }
          if (*e.peer == rank) return Status::invalid_argument(at + to + " its own rank");
          if (*e.peer >= world) {
            return Status::invalid_argument(at + to + " rank " + std::to_string(*e.peer) + ", outside the world of " +
                                            std::to_string(world) + " ranks (metadata.world_size)");
          }
        }
      }
    }
  }
  return Status::ok();
}

void tag_point_to_point(models::Plan* plan, const std::vector<int>& launch_order) {
  std::map<std::pair<CollectiveOp, int>, int> count;  // (op, peer offset) -> tasks tagged so far
  for (int id : launch_order) {
    models::Task& t = plan->tasks[static_cast<size_t>(id)];
    if (!is_send_or_recv(t)) continue;
    t.collective->tag = count[{t.collective->op, t.collective->peer_offset}]++;
  }
}

Status check_pairs(const traces::Trace& trace, const models::Plan& plan, const Assigned& assigned, int first_kept,
                   const std::string& path) {
  const int world = trace.metadata.world_size;
  // (rank, op, tag, peer) -> the task that rank runs for it.
  std::map<std::tuple<int, CollectiveOp, int, int>, int> task_for;
  for (const models::Task& t : plan.tasks) {
    if (!is_send_or_recv(t)) continue;
    for (int r = 0; r < world; ++r) {
      if (models::runs_on(t, r, world)) task_for[{r, t.collective->op, t.collective->tag, peer_of(t, r, world)}] = t.id;
    }
  }
  std::map<std::tuple<int64_t, int, int>, size_t> event_at;  // (rank, step, task) -> event
  for (const auto& [idx, st] : assigned) {
    if (st.first >= first_kept) event_at[{trace.events[idx].rank, st.first, st.second}] = idx;
  }
  std::set<int64_t> present;  // ranks with events in the kept steps
  for (const auto& [key, idx] : event_at)
    present.insert(std::get<0>(key));
  for (const auto& [key, idx] : event_at) {
    const auto& [rank, step, task] = key;
    const models::Task& t = plan.tasks[static_cast<size_t>(task)];
    if (!is_send_or_recv(t)) continue;
    const Event& e = trace.events[idx];
    const bool send = t.collective->op == CollectiveOp::kSend;
    const int peer = peer_of(t, static_cast<int>(rank), world);
    const std::string at = path + ": rank " + std::to_string(rank) + ", step " + std::to_string(step) + ", stream '" +
                           stream_name(trace, e.stream) + "': event '" + e.name + "': " + (send ? "send " : "recv ") +
                           ordinal(t.collective->tag) + (send ? " to" : " from") + " rank " + std::to_string(peer);
    const std::string other = send ? "recv" : "send";
    if (present.count(peer) == 0) {
      return Status::invalid_argument(at + ", a rank without events in this trace (import every rank's file, " +
                                      "so that each send meets its recv)");
    }
    const auto match = task_for.find(
        {peer, send ? CollectiveOp::kRecv : CollectiveOp::kSend, t.collective->tag, static_cast<int>(rank)});
    const auto there = match == task_for.end() ? event_at.end() : event_at.find({peer, step, match->second});
    if (there == event_at.end()) {
      return Status::invalid_argument(at + " has no " + other + " " + ordinal(t.collective->tag) +
                                      (send ? " from" : " to") + " rank " + std::to_string(rank) + " on rank " +
                                      std::to_string(peer) +
                                      " in that step (a pair's k-th send meets the peer's k-th recv, in launch order)");
    }
    const Event& p = trace.events[there->second];
    if (e.bytes.value_or(0) != p.bytes.value_or(0)) {
      return Status::invalid_argument(at + " moves " + std::to_string(e.bytes.value_or(0)) + " bytes, its " + other +
                                      " on rank " + std::to_string(peer) + " ('" + p.name + "') " +
                                      std::to_string(p.bytes.value_or(0)));
    }
  }
  return Status::ok();
}

}  // namespace clustertwin::models::kineto_detail
