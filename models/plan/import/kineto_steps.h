#pragma once

// The pieces of derive_plan (kineto_plan.h) that its files share: a trace's
// device events by rank and profiler step, the names it gives them, and the
// point-to-point checks. Internal to models/plan/import/.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/plan/import/kineto_plan_options.h"
#include "models/plan/plan.h"
#include "traces/event.h"

namespace clustertwin::models::kineto_detail {

/// One (rank, step): its start (the marker's, or its first device event's),
/// its end where known, and its device events per stream id, in the order
/// they started.
struct StepEvents {
  double start_us = 0;
  std::optional<double>
      end_us;  // the next step's start (the last of several: estimated, kineto_steps.cpp; one: its marker's end)
  double marker_end_us = 0;  // its marker's own end (0 without markers)
  double last_end_us = 0;    // its last device event's end
  std::map<int64_t, std::vector<size_t>> by_stream;
};

/// rank -> step (from 0) -> its device events.
using RankSteps = std::map<int64_t, std::map<int, StepEvents>>;

/// Where each kept event landed: event index -> (step, task) of a plan.
using Assigned = std::map<size_t, std::pair<int, int>>;

/// Every rank's device events by profiler step (kineto_plan.h says how),
/// each stream's in start order. InvalidArgument naming `path` when there
/// are none, or when two ranks record a different number of steps.
StatusOr<RankSteps> steps_of(const traces::Trace& trace, const std::string& path);

/// Trace stream `stream`'s name ("stream 7" when the metadata has none).
std::string stream_name(const traces::Trace& trace, int64_t stream);

/// The cost key of an event, or its name when it has none.
std::string key_of(const traces::Event& e);

/// True for a comm event whose collective is "send" or "recv".
bool is_point_to_point(const traces::Event& e);

/// The first send or recv event of a step that names no peer, itself, or a
/// rank outside the world; InvalidArgument "PATH: rank R, step S, stream
/// 'X': event 'E': ..." or OK.
Status check_peers(const traces::Trace& trace, const RankSteps& ranks, const std::string& path);

/// Ranks whose template steps look alike and run one part of the plan.
struct Group {
  std::vector<int64_t> ranks;           // ascending; the first is the group's template rank
  models::Plan plan;                    // the group's tasks, ids from 0; streams named after the template rank's
  std::map<size_t, int> task_of;        // template event -> task
  Assigned assigned;                    // every step's events of the group's ranks
  std::map<int, std::string> mismatch;  // step -> the first way one of its ranks' steps differs from the template
  std::vector<size_t> host_cut;         // the template event whose launch ends each host task but the tail
  std::vector<bool> host_cut_at_start;  // per host_cut: the task ends at that event's start, not its launch's end
  int first_host = -1, host_tail = -1;  // their tasks
  std::set<int> cut_tasks;              // the device tasks that wait for a host task
  std::vector<int> launch_order;        // device tasks by their template event's launch (else start)
  std::vector<std::string> notes;
};

/// The part of the plan `g->ranks` run, from the first one's step `tmpl`
/// (kineto_plan.h): tasks, host tasks, dependencies from its idle gaps, and
/// every step of every rank of the group matched to it (g->mismatch).
/// InvalidArgument naming `path`, the rank, step and event when a rank of
/// the group cannot run it at all.
Status derive_group(const traces::Trace& trace, const RankSteps& ranks, int tmpl, const DerivePlanOptions& options,
                    const std::string& path, Group* g);

/// The group's cross-stream dependencies checked on every step from
/// `first_step` on of its template rank (kineto_plan.h).
void check_group_dependencies(const traces::Trace& trace, const RankSteps& ranks, int tmpl, int first_step,
                              const DerivePlanOptions& options, Group* g);

/// Tags for the send and recv tasks of `plan` (tasks of one rank group, in
/// plan order; `launch_order` lists their template events' task ids in the
/// order they were launched): the k-th send to a peer offset gets tag k, as
/// does the k-th recv from one, so that a send meets the recv of the same
/// pair and order at its peer.
void tag_point_to_point(models::Plan* plan, const std::vector<int>& launch_order);

/// Every kept step's sends and recvs matched across ranks through `plan`'s
/// tags: each send has the recv of its tag on its peer, in the same step,
/// with the same bytes, and each recv its send. InvalidArgument naming the
/// rank, step and event of the first that does not.
Status check_pairs(const traces::Trace& trace, const models::Plan& plan, const Assigned& assigned, int first_kept,
                   const std::string& path);

}  // namespace clustertwin::models::kineto_detail
