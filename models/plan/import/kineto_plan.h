#pragma once

// A step plan derived from a trace that has none: what an imported PyTorch
// profiler (Kineto) trace needs before `clustertwin calibrate` can fit its
// costs and the twin can run it at another worker count.
//
// What the derivation assumes, and how:
// - Steps. A rank's steps are its profiler step markers (host events named
//   "ProfilerStep#N", from torch.profiler's schedule): a device event belongs
//   to the last marker that started at or before its launch (host_ts_us: the
//   runtime call Kineto links to it by its correlation id), or, without a
//   launch, before the event itself. On a busy GPU the kernels of step N run
//   after the host has moved on to step N + 1: only the launch says which
//   step queued them. Without markers the whole trace is one step.
// - Tasks. Every compute, comm and copy event of the template step (rank
//   0's second step, or its only one) is a task, on its stream, in the
//   order it ran. CPU operators are not tasks one by one; the host's side
//   of the step is kept where the device waited for it: where a kernel's
//   stream sat idle (more than `min_wait_us`) until the host finished
//   launching it, the host's timeline is cut at that launch's end (at the
//   kernel's start where it still sat idle after the launch, more than
//   `min_wait_us`, and no other stream's task ended meanwhile: a wait the
//   trace does not explain, kept in the host piece). Each
//   piece between two such cuts is a host task ("host #j", on a stream
//   "host", priced by its measured time), the kernel depends on the piece
//   that ends with its launch, and a last piece ("host tail") runs to the
//   next step's start (the last step's next start is not in the trace: its
//   marker's end plus the gap the step before left between its marker's end
//   and the next start; a trace of one step ends its tail at its marker's
//   end). A launch that began within `sync_window_us` of a
//   task's end on another stream is the host waiting for the device (a
//   synchronize): no cut there; the kernel depends on that task (below). A step bound by the host then replays as one
//   (the device idles between launches); a device-bound step has few cuts. A host piece that waited for the device (a
//   synchronize) is held as host time: it does not grow when the device work does.
// - Ranks. Without point-to-point events every rank runs the same plan
//   (SPMD: data parallel, FSDP): each (rank, step) from the template on
//   must run the template's events (steps before it that do not are left
//   out, with a note: the profiler's first steps settle), stream by stream
//   (a rank's device streams, in id order, stand for rank 0's: they may be
//   named per GPU), with the same cost keys in the same order; the first
//   that does not is named. With sends and recvs (pipeline stages), ranks
//   are grouped by what their template step runs (per stream: each event's
//   key and kind, a comm event's collective, bytes and peer offset); each
//   group's first rank is its template, the rule above holds within the
//   group, and the plan holds every group's tasks one group after another,
//   each task restricted to its group's ranks (Task::ranks) and named
//   "[ranks 0-1] NAME", on the union of the groups' streams by name. With
//   more than one group every task is restricted, even one that every group
//   runs alike: the groups' dependencies and host pieces differ, and a task
//   shared by all would need one position on every group's streams.
// - Point-to-point. A send or recv (an imported comm event with collective
//   "send" or "recv" and its `peer`, a global rank) is a send/recv task with
//   peer_offset = peer - rank. The k-th send of a group's template step to
//   one peer offset (in launch order) gets tag k, as does the k-th recv from
//   one: the twin meets a send with the recv of the same tag at its peer.
//   Every kept step is checked: each send meets its recv on the peer in the
//   same step with the same bytes, and each recv its send; a send or recv
//   without a peer, to itself or outside the world is refused. Each error
//   names the rank, step, stream and event.
// - Groups of collectives. A collective spans the world unless its event
//   says it ran among fewer ranks (group_size): then the trace must say
//   which (group_start / group_stride, from c10d's "Process Group Ranks" or
//   "Global rank start" / "stride"), and the plan's group is a block of
//   consecutive ranks or the ranks equal modulo a stride (data-parallel
//   replicas of one stage); anything else is refused with the event.
// - Dependencies. Tasks of a stream run in order. A task depends on a task
//   of another stream when its own stream sat idle just before it (it
//   started more than `min_wait_us` after its predecessor ended, or after
//   its step began, or after its launch when that came later) and that
//   task ended in the idle gap: the latest such
//   end, in the same step (deps) or the previous one (prev_step_deps).
//   Measured on each group's template rank in the template step (and, for
//   prev_step_deps, the step before it), then checked on its kept steps.
// - Bytes come from the events (In msg nelems x dtype size); an
//   all-gather's are the per-rank part x group size (the plan counts the
//   total). A comm event without bytes (older PyTorch records neither the
//   kernel's size nor its operator's input dims) gets 0 bytes and a note.

#include <string>
#include <vector>

#include "common/status.h"
#include "models/plan/import/kineto_plan_options.h"
#include "models/plan/plan.h"
#include "traces/event.h"

namespace clustertwin::models {

struct DerivedRun {
  models::Plan plan;
  /// The trace again, device events only, each with its step (from 0) and
  /// task_id, and metadata.config carrying the plan, runner_steps and
  /// prologue_steps (0) as a recorded run's does (calibrators/replay.h).
  traces::Trace trace;
  int steps = 0;          // kept
  int template_step = 0;  // among the kept steps
  /// The rank whose template step gave each group's tasks (one group
  /// unless ranks run different parts: pipeline stages).
  std::vector<int64_t> template_ranks;
  /// What the derivation left out or could not know (steps before the
  /// template that differ from it, collectives without a message size), one
  /// line each, for the command to print.
  std::vector<std::string> notes;
};

/// InvalidArgument naming `path`, the rank, step, stream or event when the
/// trace cannot be read as one plan repeated (see above), or when a send or
/// recv does not meet its pair.
StatusOr<DerivedRun> derive_plan(const traces::Trace& trace, const std::string& path,
                                 const DerivePlanOptions& options = {});

}  // namespace clustertwin::models
